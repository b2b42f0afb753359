"""Every schema violation of a workflow document, as diagnostics with fix hints.

Only files that fail the fast generated validator come here, so jsonschema is
imported on the slow path alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from handrail._resources import resource
from handrail.compiler.source import KEY
from handrail.expr import did_you_mean
from handrail.model.errors import Finding, json_kind

DURATION = "^[1-9][0-9]{0,5}[smhd]$"  # spec/workflow.schema.json's duration and approver
APPROVER = "^(role:)?[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$"


@cache
def _validator() -> Any:
    import json  # lazy: only a workflow the generated validator refuses needs it

    from jsonschema import Draft7Validator  # lazy: only a workflow the generated validator refuses needs it

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
    """What one jsonschema error means to an author, by the keyword that failed (as
    jsonschema binds a function to each keyword); any other keyword says its message."""
    explain = _EXPLAIN.get(error.validator, _other)
    return explain(error, _pointer(error.absolute_path))


def _error(code: str, message: str, at: str, hint: str | None = None, offset: int | None = None) -> Finding:
    return Finding(code, "error", message, at, hint, offset)


def _additional_properties(error: Any, at: str) -> Iterator[Finding]:
    schema = error.schema if isinstance(error.schema, dict) else {}
    allowed = sorted(schema.get("properties", {}))
    is_condition = "var" in allowed and "and" in allowed
    for key in sorted(set(error.instance) - set(allowed)):
        if is_condition:
            alias = OPERATOR_ALIASES.get(key)
            hint = f"did you mean `{alias}`?" if alias else did_you_mean(key, allowed)
            hint = hint or "operators: " + ", ".join(allowed)
            yield _error("H301", f"unknown condition operator `{key}`", f"{at}/{_escape(key)}", hint, KEY)
        else:
            hint = did_you_mean(key, allowed) or "remove it; known fields: " + ", ".join(allowed)
            yield _error("H101", f"unknown field `{key}`", f"{at}/{_escape(key)}", hint, KEY)


def _required(error: Any, at: str) -> Iterator[Finding]:
    for name in error.validator_value:
        if name not in error.instance:
            yield _error("H100", f"missing required field `{name}`", at, _add_hint(name))


def _type(error: Any, at: str) -> Iterator[Finding]:
    found = json_kind(error.instance)
    yield _error("H102", f"expected {_types(error.validator_value)}, found {found}", at)


def _unique_items(error: Any, at: str) -> Iterator[Finding]:
    seen: list[Any] = []
    for index, item in enumerate(error.instance):
        if item in seen:
            yield _error(
                "H103", f"duplicate entry {_short(item)}", f"{at}/{index}", "remove the repeated entry"
            )
        seen.append(item)


def _pattern(error: Any, at: str) -> Iterator[Finding]:
    instance = error.instance
    if at == "/version":
        message = f"{_short(instance)} is not a semantic version (MAJOR.MINOR.PATCH)"
        yield _error("H103", message, at, _version_hint(instance))
    else:
        message = f"{_short(instance)} does not match {error.validator_value}"
        yield _error("H103", message, at, _pattern_hint(error.validator_value, instance))


def _one_of(error: Any, at: str) -> Iterator[Finding]:
    options = error.validator_value if error.validator == "enum" else [error.validator_value]
    words = [str(o) for o in options]
    message = f"{_short(error.instance)} is not one of {', '.join(words)}"
    yield _error("H103", message, at, did_you_mean(str(error.instance), words))


def _min_items(error: Any, at: str) -> Iterator[Finding]:
    if error.validator_value != 1:
        return _other(error, at)
    return iter((_error("H103", "the list is empty; it needs at least one entry", at),))


def _min_length(error: Any, at: str) -> Iterator[Finding]:
    if error.validator_value != 1:  # jsonschema says only "'do' is too short"
        message = f"{_short(error.instance)} is too short: at least {error.validator_value} characters"
        return iter((_error("H103", message, at),))
    return iter((_error("H103", "the text is empty", at),))


def _max_length(error: Any, at: str) -> Iterator[Finding]:
    message = f"the text is too long: at most {error.validator_value} characters, not {len(error.instance)}"
    return iter((_error("H103", message, at),))


def _composition(error: Any, at: str) -> Iterator[Finding]:
    yield _error("H103", "a composition holds exactly one of `and`, `or`, `not`", at)


def _other(error: Any, at: str) -> Iterator[Finding]:
    yield _error("H103", _clean(error.message), at)


_EXPLAIN: dict[str, Callable[[Any, str], Iterator[Finding]]] = {
    "additionalProperties": _additional_properties,
    "required": _required,
    "type": _type,
    "uniqueItems": _unique_items,
    "pattern": _pattern,
    "enum": _one_of,
    "const": _one_of,
    "minItems": _min_items,
    "minLength": _min_length,
    "maxLength": _max_length,
    "minProperties": _composition,
    "maxProperties": _composition,
}


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
    if pattern == DURATION:
        return "a whole number and a unit: s, m, h or d, e.g. `30m` or `2h`"
    if pattern == APPROVER:
        return "a person's name from the tokens file, or `role:NAME`"
    return None


def _types(value: Any) -> str:
    names = value if isinstance(value, list) else [value]
    return " or ".join(("an " if n in ("object", "array") else "a ") + str(n) for n in names)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _clean(message: str) -> str:
    return message if len(message) <= 200 else message[:197] + "..."
