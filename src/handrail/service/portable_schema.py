"""Published tool schemas in the form strict MCP clients accept.

JSON Schema allows `"type": ["string", "null"]` and `{}` (any value), but several
clients and model providers read tool schemas with a subset of JSON Schema that has
neither (the MCP Inspector's `--strict` warns on both). `portable` rewrites them to
what means the same: a type list becomes an `anyOf` of one type each, and a schema
that admits anything lists every JSON type.
"""

from __future__ import annotations

from typing import Any

JSON_TYPES = ("string", "number", "boolean", "object", "array", "null")

# keywords whose value is one schema, a list of schemas, or a map of names to schemas
_ONE = ("items", "additionalItems", "additionalProperties", "not", "if", "then", "else", "contains",
        "propertyNames", "unevaluatedItems", "unevaluatedProperties")  # fmt: skip
_MANY = ("anyOf", "oneOf", "allOf", "prefixItems")
_NAMED = ("properties", "patternProperties", "definitions", "$defs", "dependentSchemas")


def any_of(types: list[str] | tuple[str, ...]) -> list[dict[str, Any]]:
    return [{"type": t} for t in types]


def portable(schema: Any) -> Any:
    """`schema` (a JSON Schema) without type lists or empty schemas; the input is not changed."""
    if isinstance(schema, bool):
        return schema
    if not isinstance(schema, dict):
        return schema
    if not schema:
        return {"anyOf": any_of(JSON_TYPES)}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _ONE and isinstance(value, dict):
            out[key] = portable(value)
        elif key in _MANY and isinstance(value, list):
            out[key] = [portable(v) for v in value]
        elif key in _NAMED and isinstance(value, dict):
            out[key] = {name: portable(v) for name, v in value.items()}
        elif key == "items" and isinstance(value, list):  # draft-07's tuple form
            out[key] = [portable(v) for v in value]
        else:
            out[key] = value
    types = out.get("type")
    if isinstance(types, list):
        del out["type"]
        if len(types) == 1:
            out["type"] = types[0]
        elif "anyOf" not in out:
            out["anyOf"] = any_of(types)
        else:  # both must hold: the types join the schema's own alternatives under allOf
            out["allOf"] = [*out.get("allOf", []), {"anyOf": any_of(types)}]
    return out
