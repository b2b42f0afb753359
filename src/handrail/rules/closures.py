"""Validation rules -> closures: contains, regex, length, schema, and/or/not.

Every regex and JSON Schema is compiled here once, at load time, and shared
between identical rules; a check only calls what was compiled.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from handrail.expr import ParsedConditions, Reporter, compile_condition
from handrail.internals import regex_patterns, validator_globals
from handrail.model import budget
from handrail.model.errors import ValidationEngineError
from handrail.model.workflow import Check, Condition, Context, Output, Rule
from handrail.patterns import PatternError, compile_pattern, flag_bits, harden
from handrail.patterns.caching import BoundedCache

Failures = list[tuple[str, str]]
RULE_FIELDS = {
    "contains": ("value",),
    "regex": ("pattern", "flags"),
    "length": ("min", "max"),
    "schema": ("schema",),
}
COMMON_FIELDS = ("type", "message", "condition")

SchemaCheck = Callable[[Any], "tuple[str, str] | None"]
# canonical schema -> (validator, its patterns that backtrack); what workflow files share
_validators: BoundedCache[str, tuple[SchemaCheck, list[tuple[str, str]]]] = BoundedCache(1024)
BACKTRACKING_HINT = (
    "without lookaround, backreferences, atomic groups and possessive repeats a regex runs "
    "in linear time on any text"
)


def backtracking_message(reason: str, what: str = "this regex") -> str:
    return f"{what} needs the backtracking engine ({reason}): each search is cut off at a time limit"


def compile_criteria(
    criteria: Any, at: str, report: Reporter, *, parsed: ParsedConditions | None = None
) -> tuple[Rule, ...]:
    """`validationCriteria` (a list, all must pass, or one composition) -> rules;
    `parsed` holds the rules' conditions when the compiler has parsed them already."""
    if isinstance(criteria, list):
        return tuple(_compile(item, f"{at}/{i}", report, parsed) for i, item in enumerate(criteria))
    return (_compile(criteria, at, report, parsed),)


def run_rules(rules: tuple[Rule, ...], output: Output, context: Context) -> Failures:
    failures: Failures = []
    for rule in rules:
        found = rule.check(output, context)
        if found:
            failures.extend(found)
    return failures


def criteria_text(rule: Rule) -> str:
    text = rule.description
    if rule.condition is not None:
        text += f" (when {rule.condition.text})"
    return text


def _compile(raw: Any, at: str, report: Reporter, parsed: ParsedConditions | None) -> Rule:
    if not isinstance(raw, Mapping):
        report.error("H403", "a validation rule is an object", at)
        return _broken()
    if "type" not in raw:
        return _composition(raw, at, report, parsed)
    kind = raw.get("type")
    message = str(raw.get("message") or f"output fails the {kind} rule")
    for key in raw:
        if key not in COMMON_FIELDS and key not in RULE_FIELDS.get(str(kind), ()):
            report.warning(
                "H405",
                f"`{key}` has no effect on a `{kind}` rule",
                f"{at}/{key}",
                f"a `{kind}` rule reads {', '.join(RULE_FIELDS.get(str(kind), ()))}",
            )
    condition = None
    if "condition" in raw:
        condition = compile_condition(
            raw["condition"], f"{at}/condition", report, what="rule condition", parsed=parsed
        )
    if kind == "contains":
        built = _contains(raw, message, at, report)
    elif kind == "regex":
        built = _regex(raw, message, at, report)
    elif kind == "length":
        built = _length(raw, message, at, report)
    elif kind == "schema":
        built = _schema(raw, message, at, report)
    else:
        report.error("H403", f"unknown rule type `{kind}`", f"{at}/type")
        return _broken()
    if built is None:
        return _broken()
    description, check = built
    return Rule(str(kind), f"{message} ({description})", _when(condition, check), condition)


def _broken() -> Rule:
    return Rule("broken", "broken rule", lambda out, ctx: [])


def _when(condition: Condition | None, check: Check) -> Check:
    if condition is None:
        return check
    holds = condition.holds
    # a rule whose condition does not hold is skipped, and so passes
    return lambda out, ctx: check(out, ctx) if holds(ctx) else []


def _contains(raw: Mapping[str, Any], message: str, at: str, report: Reporter) -> tuple[str, Check] | None:
    value = raw.get("value")
    if not isinstance(value, str) or value == "":
        report.error(
            "H403",
            "a `contains` rule needs a non-empty `value`",
            at,
            'add "value": "<text>"',
        )
        return None
    failure = [(message, f"Include the exact text {value!r} (case matters).")]
    return f'contains "{value}"', lambda out, ctx: [] if value in out.text else failure


def _regex(raw: Mapping[str, Any], message: str, at: str, report: Reporter) -> tuple[str, Check] | None:
    pattern, flags = raw.get("pattern"), raw.get("flags", "")
    if not isinstance(pattern, str):
        report.error("H403", "a `regex` rule needs a `pattern`", at, 'add "pattern": "<regex>"')
        return None
    if not isinstance(flags, str):
        report.error("H401", 'invalid regex flags: `flags` is a string such as "im"', f"{at}/flags")
        return None
    try:
        flag_bits(flags)  # first: a pattern's own error may mention flags, e.g. "(?i)" placement
    except PatternError as exc:
        report.error("H401", f"invalid regex flags: {exc.message}", f"{at}/flags")
        return None
    try:
        compiled = compile_pattern(pattern, flags)
    except PatternError as exc:
        report.error(
            "H400",
            f"invalid regex: {exc.message}",
            f"{at}/pattern",
            None,
            exc.offset,
        )
        return None
    if compiled.fallback is not None:
        report.warning("H406", backtracking_message(compiled.fallback), f"{at}/pattern", BACKTRACKING_HINT)
    search = compiled.search
    shown = f"/{pattern}/{flags}"
    failure = [(message, f"Make the output match the pattern {shown}.")]
    return f"matches {shown}", lambda out, ctx: [] if search(out.text) else failure


def _length(raw: Mapping[str, Any], message: str, at: str, report: Reporter) -> tuple[str, Check] | None:
    low, high = raw.get("min"), raw.get("max")
    if low is None and high is None:
        report.error("H403", "a `length` rule needs `min`, `max` or both", at)
        return None
    for key, bound in (("min", low), ("max", high)):
        if bound is not None and (not isinstance(bound, int | float) or isinstance(bound, bool) or bound < 0):
            report.error("H403", f"`{key}` of a `length` rule is a number of characters", f"{at}/{key}")
            return None
    if low is not None and high is not None and low > high:
        report.error("H404", f"`min` ({low}) is greater than `max` ({high})", f"{at}/min")
        return None
    if low is not None and high is not None:
        description = f"between {low} and {high} characters"
    elif low is not None:
        description = f"at least {low} characters"
    else:
        description = f"at most {high} characters"

    def check(out: Output, ctx: Context) -> Failures:
        n = len(out.text)  # characters (code points), not bytes
        if low is not None and n < low:
            return [(message, f"The output has {n} characters; write at least {low}.")]
        if high is not None and n > high:
            return [(message, f"The output has {n} characters; cut it to at most {high}.")]
        return []

    return description, check


def _schema(raw: Mapping[str, Any], message: str, at: str, report: Reporter) -> tuple[str, Check] | None:
    schema = raw.get("schema")
    if not isinstance(schema, Mapping):
        report.error("H403", "a `schema` rule needs a `schema` object", at)
        return None
    problem = schema_problem(schema)
    if problem is not None:
        where, text = problem
        report.error("H402", f"invalid JSON Schema: {text}", f"{at}/schema{where}")
        return None
    from handrail.rules.schema_cost import hazards  # lazy: only a schema rule needs it

    for code, where, text in hazards(schema):
        report.error(code, text, f"{at}/schema{where}")
        return None
    try:
        validate, fallbacks = _compiled_schema(schema)
    except Exception as exc:  # valid by the meta-schema, yet unusable, e.g. an unresolvable $ref
        report.error("H402", f"invalid JSON Schema: {exc}", f"{at}/schema")
        return None
    for pattern, reason in fallbacks:
        message = backtracking_message(reason, f"the schema's pattern {pattern!r}")
        report.warning("H406", message, f"{at}/schema", BACKTRACKING_HINT)
    required = schema.get("required")
    description = "JSON matching the schema"
    if isinstance(required, list) and required:
        description += " (required: " + ", ".join(map(str, required)) + ")"

    def check(out: Output, ctx: Context) -> Failures:
        is_json, value = out.json()
        if not is_json:
            return [
                (
                    f"{message}: the output is not JSON",
                    "Reply with one JSON value and nothing else.",
                )
            ]
        error = validate(value)
        if error is None:
            return []
        where, text = error
        return [(f"{message}: {where}: {text}", f"Fix {where} so that it {text}.")]

    return description, check


def _composition(raw: Mapping[str, Any], at: str, report: Reporter, parsed: ParsedConditions | None) -> Rule:
    keys = [k for k in ("and", "or", "not") if k in raw]
    if len(keys) != 1 or len(raw) != 1:
        report.error("H403", "a composition holds exactly one of `and`, `or`, `not`", at)
        return _broken()
    key = keys[0]
    if key == "not":
        inner = _compile(raw["not"], f"{at}/not", report, parsed)
        inner_check = inner.check
        failure = [
            (
                f"The output must not satisfy: {inner.description}",
                f"Remove what makes it {inner.description}.",
            )
        ]

        def negate(out: Output, ctx: Context) -> Failures:
            if inner.condition is not None and not inner.condition.holds(ctx):
                return []  # a skipped rule stays skipped under `not`
            return [] if inner_check(out, ctx) else failure

        return Rule("not", f"not ({inner.description})", negate)
    items = raw[key]
    if not isinstance(items, list) or not items:
        report.error("H403", f"`{key}` takes a non-empty list of rules", f"{at}/{key}")
        return _broken()
    parts = tuple(_compile(item, f"{at}/{key}/{i}", report, parsed) for i, item in enumerate(items))
    checks = tuple(p.check for p in parts)
    if key == "and":

        def every(out: Output, ctx: Context) -> Failures:
            failures: Failures = []
            for check in checks:
                failures.extend(check(out, ctx))
            return failures

        return Rule("and", "all of: " + "; ".join(p.description for p in parts), every)

    def some(out: Output, ctx: Context) -> Failures:
        failures: Failures = []
        for check in checks:
            found = check(out, ctx)
            if not found:
                return []
            failures.extend(found)
        issue = "None of these alternatives holds: " + " | ".join(f for f, _ in failures)
        return [(issue, failures[0][1] + " (any one alternative is enough)")]

    return Rule("or", "any of: " + "; ".join(p.description for p in parts), some)


def _canonical(schema: Mapping[str, Any]) -> str:
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


def schema_problem(schema: Mapping[str, Any]) -> tuple[str, str] | None:
    """(pointer inside the schema, what is wrong) when `schema` is no valid draft-07 schema."""
    from handrail.rules.schemas import check_schema  # lazy: only a schema rule needs it

    return check_schema(schema)


def _compiled_schema(schema: Mapping[str, Any]) -> tuple[SchemaCheck, list[tuple[str, str]]]:
    key = _canonical(schema)
    found = _validators.get(key)
    if found is not None:
        return found
    import fastjsonschema  # lazy: only a schema rule needs it

    compiled = fastjsonschema.compile(json.loads(key), use_default=False, handlers=_NO_REMOTE)
    names = validator_globals(compiled)
    # the schema's `pattern`s run on agents' output: linear-time engines, as for regex rules
    fallbacks = harden(regex_patterns(names))
    _guard_references(names)

    def validate(value: Any) -> tuple[str, str] | None:
        try:
            compiled(value)
        except fastjsonschema.JsonSchemaValueException as exc:
            return _json_path(exc.path, value), _reason(exc)
        except RecursionError:
            # handrail check refuses a schema that recurses on one value (H407); this is a
            # value nested deeper than the schema's references can follow
            raise ValidationEngineError(
                data={"details": "the output nests too deeply for the schema's references to check it"}
            ) from None
        return None

    _validators.put(key, (validate, fallbacks))
    return validate, fallbacks


def _guard_references(names: dict[str, Any]) -> None:
    """Make every `$ref` the generated validator follows check the request's time budget:
    references are how a schema of a few lines checks a value millions of times."""
    for name, function in list(names.items()):
        # the main function too: `"$ref": "#"` calls it by name (our caller holds it directly)
        if name.startswith("validate") and getattr(function, "__globals__", None) is names:

            def guarded(*args: Any, _function: Any = function, **kwargs: Any) -> Any:
                budget.check()
                return _function(*args, **kwargs)

            names[name] = guarded


def _no_remote(uri: str) -> Any:
    raise ValueError(
        f"$ref {uri!r} points outside the schema; only references inside it (#/...) are followed"
    )


# fastjsonschema fetches a $ref it cannot resolve with urllib, unless a handler takes the
# scheme: every scheme urllib opens is taken here, so no schema reads a file or the network
_NO_REMOTE: dict[str, Callable[[str], Any]] = {
    scheme: _no_remote for scheme in ("", "http", "https", "file", "ftp", "data")
}


def _json_path(path: list[Any] | None, value: Any) -> str:
    """fastjsonschema's path (['data', 'items', '0', 'url']; indexes come as strings)
    -> '$.items[0].url', read against the value so list indexes show as [n]."""
    out = "$"
    for part in (path or ["data"])[1:]:
        key = str(part)
        if isinstance(value, list) and key.isdecimal() and int(key) < len(value):
            out += f"[{key}]"
            value = value[int(key)]
            continue
        out += f".{key}" if _PLAIN_KEY.fullmatch(key) else "[" + json.dumps(key, ensure_ascii=False) + "]"
        value = value.get(key) if isinstance(value, dict) else None
    return out


_PLAIN_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


def _reason(exc: Any) -> str:
    text = str(exc.message)
    name = str(getattr(exc, "name", "") or "")
    if name and text.startswith(name):
        text = text[len(name) :].strip()
    return text
