"""The baseline: an interpreter of the raw workflow JSON, the way a per-request
engine works (WorkRail's classic one does this): walk the dicts on every call,
compile each regex and JSON Schema on every call.

It exists to be measured against; it implements the same meaning as handrail for
the cases the benchmarks run, and a test checks that both give the same answers.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL}
_TRUE, _FALSE = {"true", "yes", "1"}, {"false", "no", "0"}
MISSING = object()


def _get(context: dict[str, Any], path: str) -> Any:
    value: Any = context
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return MISSING
    return value


def _equals(a: Any, b: Any) -> bool:
    if a is MISSING or a is None:
        return b is None
    if b is None:
        return False
    if isinstance(a, bool) or isinstance(b, bool):
        if isinstance(a, bool) and isinstance(b, bool):
            return a is b
        other, flag = (b, a) if isinstance(a, bool) else (a, b)
        return isinstance(other, str) and other.strip().lower() in (_TRUE if flag else _FALSE)
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().lower() == b.strip().lower()
    try:
        if isinstance(a, str):
            return float(a) == b
        if isinstance(b, str):
            return float(b) == a
    except ValueError:
        return False
    return bool(a == b)


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def holds(condition: Any, context: dict[str, Any]) -> bool:
    if not condition:
        return True
    if isinstance(condition, str):  # the text form, parsed on every call
        from handrail.expr.parse import _parser

        return _tree_holds(_parser().parse(condition), context)
    if "and" in condition:
        return all(holds(c, context) for c in condition["and"])
    if "or" in condition:
        return any(holds(c, context) for c in condition["or"])
    if "not" in condition:
        return not holds(condition["not"], context)
    value = _get(context, condition["var"])
    if "equals" in condition:
        return _equals(value, condition["equals"])
    if "not_equals" in condition:
        return not _equals(value, condition["not_equals"])
    for op, test in (
        ("gt", lambda a, b: a > b),
        ("gte", lambda a, b: a >= b),
        ("lt", lambda a, b: a < b),
        ("lte", lambda a, b: a <= b),
    ):
        if op in condition:
            return _num(value) and bool(test(value, condition[op]))
    return value not in (MISSING, None, False, 0, "")


def _rule_failures(rule: dict[str, Any], output: str, context: dict[str, Any]) -> list[str]:
    if "and" in rule:
        return [m for r in rule["and"] for m in _rule_failures(r, output, context)]
    if "or" in rule:
        found = [_rule_failures(r, output, context) for r in rule["or"]]
        return [] if any(not f for f in found) else [m for f in found for m in f]
    if "not" in rule:
        return [] if _rule_failures(rule["not"], output, context) else ["not"]
    if "condition" in rule and not holds(rule["condition"], context):
        return []
    kind, message = rule["type"], rule["message"]
    if kind == "contains":
        return [] if rule["value"] in output else [message]
    if kind == "regex":
        flags = 0
        for ch in rule.get("flags", ""):
            flags |= _FLAGS.get(ch, 0)
        compiled = re._compiler.compile(rule["pattern"], flags)  # type: ignore[attr-defined]  # no cache
        return [] if compiled.search(output) else [message]
    if kind == "length":
        n = len(output)
        low, high = rule.get("min"), rule.get("max")
        return [message] if (low is not None and n < low) or (high is not None and n > high) else []
    if kind == "schema":
        import jsonschema

        try:
            value = json.loads(output)
        except ValueError:
            return [message]
        errors = list(jsonschema.Draft7Validator(rule["schema"]).iter_errors(value))
        return [message] if errors else []
    return []


def validate(document: dict[str, Any], step_id: str, output: str, context: dict[str, Any]) -> bool:
    step = _find(document["steps"], step_id)
    criteria = step.get("validationCriteria") if step else None
    if not criteria:
        return bool(output.strip())
    rules = criteria if isinstance(criteria, list) else [criteria]
    return not [m for r in rules for m in _rule_failures(r, output, context)]


def _find(steps: list[dict[str, Any]], step_id: str) -> dict[str, Any] | None:
    for step in steps:
        if step["id"] == step_id:
            return step
        body = step.get("body")
        if isinstance(body, list):
            found = _find(body, step_id)
            if found:
                return found
    return None


_TEXT_OPS = {"==": "equals", "!=": "not_equals", ">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}


def _literal(tree: Any) -> Any:
    kind = tree.data
    if kind == "list":
        return [_literal(c) for c in tree.children]
    if kind in ("true", "false", "null"):
        return {"true": True, "false": False, "null": None}[kind]
    token = str(tree.children[0])
    if kind == "string":
        return token[1:-1]
    return json.loads(token)


def _tree_holds(tree: Any, context: dict[str, Any]) -> bool:
    kind = tree.data
    if kind == "or_expr":
        return any(_tree_holds(c, context) for c in tree.children)
    if kind == "and_expr":
        return all(_tree_holds(c, context) for c in tree.children)
    if kind == "negation":
        return not _tree_holds(tree.children[0], context)
    if kind == "constant":
        return bool(_literal(tree.children[0]))
    name = ".".join(str(t) for t in tree.children[0].children)
    if kind == "truthy":
        return holds({"var": name}, context)
    op, value = str(tree.children[1]), _literal(tree.children[2])
    if op == "in":
        return any(_equals(_get(context, name), v) for v in value)
    if op == "contains":
        actual = _get(context, name)
        if isinstance(actual, str) and isinstance(value, str):
            return value.lower() in actual.lower()
        return isinstance(actual, list) and any(_equals(a, value) for a in actual)
    if op in ("startsWith", "endsWith", "matches"):
        actual = _get(context, name)
        if not isinstance(actual, str):
            return False
        if op == "matches":
            return re._compiler.compile(value, 0).search(actual) is not None  # type: ignore[attr-defined]
        folded, affix = actual.strip().lower(), value.lower()
        return folded.startswith(affix) if op == "startsWith" else folded.endswith(affix)
    return holds({"var": name, _TEXT_OPS[op]: value}, context)
