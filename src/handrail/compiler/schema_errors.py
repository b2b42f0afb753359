"""Every schema violation of a workflow document, as diagnostics with fix hints.

Only files that fail the fast generated validator come here, so jsonschema is
imported on the slow path alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any

from handrail._resources import resource
from handrail.compiler.source import KEY
from handrail.errors import Finding, json_kind
from handrail.expr import did_you_mean


@cache
def _validator() -> Any:
    import json

    from jsonschema import Draft7Validator

    schema = json.loads(resource("spec", "workflow.schema.json").read_text("utf-8"))
    return Draft7Validator(schema)


def _pointer(path: Any) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def schema_diagnostics(document: Any) -> list[Finding]:
    out: list[Finding] = []
    for error in _validator().iter_errors(document):
        out.extend(_explain(error))
    # jsonschema raises `required` once per missing name, and each names them all
    return list(dict.fromkeys(out))


def _explain(error: Any) -> Iterator[Finding]:
    at = _pointer(error.absolute_path)
    kind = error.validator
    schema = error.schema if isinstance(error.schema, dict) else {}
    instance = error.instance
    if kind == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        is_condition = "var" in allowed and "and" in allowed
        for key in sorted(set(instance) - set(allowed)):
            if is_condition:
                alias = OPERATOR_ALIASES.get(key)
                yield Finding(
                    "H301",
                    "error",
                    f"unknown condition operator `{key}`",
                    f"{at}/{_escape(key)}",
                    f"did you mean `{alias}`?"
                    if alias
                    else did_you_mean(key, allowed) or "operators: " + ", ".join(allowed),
                    KEY,
                )
            else:
                hint = did_you_mean(key, allowed) or "remove it; known fields: " + ", ".join(allowed)
                yield Finding("H101", "error", f"unknown field `{key}`", f"{at}/{_escape(key)}", hint, KEY)
    elif kind == "required":
        for name in error.validator_value:
            if name not in instance:
                yield Finding(
                    "H100",
                    "error",
                    f"missing required field `{name}`",
                    at,
                    _add_hint(name),
                    None,
                )
    elif kind == "type":
        yield Finding(
            "H102",
            "error",
            f"expected {_types(error.validator_value)}, found {json_kind(instance)}",
            at,
            None,
            None,
        )
    elif kind == "uniqueItems":
        seen: list[Any] = []
        for index, item in enumerate(instance):
            if item in seen:
                yield Finding(
                    "H103",
                    "error",
                    f"duplicate entry {_short(item)}",
                    f"{at}/{index}",
                    "remove the repeated entry",
                    None,
                )
            seen.append(item)
    elif kind == "pattern" and at == "/version":
        yield Finding(
            "H103",
            "error",
            f"{_short(instance)} is not a semantic version (MAJOR.MINOR.PATCH)",
            at,
            _version_hint(instance),
            None,
        )
    elif kind == "pattern":
        yield Finding(
            "H103",
            "error",
            f"{_short(instance)} does not match {error.validator_value}",
            at,
            _pattern_hint(error.validator_value, instance),
            None,
        )
    elif kind in ("enum", "const"):
        options = error.validator_value if kind == "enum" else [error.validator_value]
        words = [str(o) for o in options]
        yield Finding(
            "H103",
            "error",
            f"{_short(instance)} is not one of {', '.join(words)}",
            at,
            did_you_mean(str(instance), words),
            None,
        )
    elif kind == "minItems" and error.validator_value == 1:
        yield Finding("H103", "error", "the list is empty; it needs at least one entry", at, None, None)
    elif kind == "minLength" and error.validator_value == 1:
        yield Finding("H103", "error", "the text is empty", at, None, None)
    elif kind in ("minProperties", "maxProperties"):
        yield Finding(
            "H103",
            "error",
            "a composition holds exactly one of `and`, `or`, `not`",
            at,
            None,
            None,
        )
    else:
        yield Finding("H103", "error", _clean(error.message), at, None, None)


# Operator names other condition languages use, and handrail's word for each.
OPERATOR_ALIASES = {
    "eq": "equals",
    "ne": "not_equals",
    "neq": "not_equals",
    "notEquals": "not_equals",
    "not_equal": "not_equals",
    "greaterThan": "gt",
    "greaterThanOrEqual": "gte",
    "lessThan": "lt",
    "lessThanOrEqual": "lte",
    "includes": "contains",
    "regex": "matches",
}


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _version_hint(value: Any) -> str:
    parts = re.findall(r"\d+", value)[:3] if isinstance(value, str) else []
    fixed = ".".join(str(int(p)) for p in [*parts, "0", "0", "0"][:3]) if parts else "1.0.0"
    return f"write it as MAJOR.MINOR.PATCH, e.g. `{fixed}`"


def _add_hint(name: str) -> str:
    examples = {
        "version": '"version": "0.1.0"',
        "id": '"id": "my-workflow"',
        "steps": '"steps": [...]',
    }
    return "add " + examples.get(name, f'"{name}": ...')


def _pattern_hint(pattern: str, value: Any) -> str | None:
    if pattern == "^[a-z0-9-]+$" and isinstance(value, str):
        fixed = re.sub(r"[^a-z0-9-]+", "-", value.lower()).strip("-")
        return f"use lowercase letters, digits and hyphens, e.g. `{fixed}`" if fixed else None
    return None


def _types(value: Any) -> str:
    names = value if isinstance(value, list) else [value]
    return " or ".join(("an " if n in ("object", "array") else "a ") + str(n) for n in names)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _clean(message: str) -> str:
    return message if len(message) <= 200 else message[:197] + "..."
