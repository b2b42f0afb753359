"""Hostile workflow documents, and the requests that make them expensive.

Each builder returns a workflow (a dict) that `handrail check` accepts or flags, and
that once served costs far more than its size suggests unless the server bounds it:
loops nested deep, conditions thousands of terms wide, schemas that recurse or
double, patterns that need the backtracking engine, templates that amplify. The
reliability tests and `benchmarks.fuzz_long` both use them.
"""

from __future__ import annotations

import random
from typing import Any

TITLE = "A hostile workflow"


def workflow(steps: list[dict[str, Any]], wid: str = "hostile", **extra: Any) -> dict[str, Any]:
    return {
        "id": wid,
        "name": TITLE,
        "description": "Built to cost more than it looks.",
        "version": "1.0.0",
        "steps": steps,
        **extra,
    }


def step(sid: str, **fields: Any) -> dict[str, Any]:
    return {"id": sid, "title": f"Step {sid}", "prompt": "Do the thing.", **fields}


def nested_loops(depth: int, max_iterations: int = 1000, *, reads_iteration: bool = False) -> dict[str, Any]:
    """`while` loops nested `depth` deep whose bodies are all skipped (context: `go` true,
    `mode` "off"). With `reads_iteration`, each innermost step reads its loop's
    `currentIteration`, so iterations differ and cannot be skipped as one."""
    condition: Any = (
        {"and": [{"var": "mode", "equals": "on"}, {"var": "currentIteration", "gt": 10**6}]}
        if reads_iteration
        else {"var": "mode", "equals": "on"}
    )
    body: list[dict[str, Any]] = [step("inner", runCondition=condition)]
    for level in range(depth, 0, -1):
        body = [_while(level, {"var": "go", "equals": True}, max_iterations, body)]
    return workflow([step("first"), *body, step("last")], "nested-loops")


def _while(level: int, condition: Any, max_iterations: int, body: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "id": f"loop-{level}",
        "type": "loop",
        "title": f"Loop {level}",
        "loop": {"type": "while", "condition": condition, "maxIterations": max_iterations, **extra},
        "body": body,
    }


NESTED_CONTEXT = {"go": True, "mode": "off"}


def entangled_loops(depth: int, max_iterations: int = 1000) -> dict[str, Any]:
    """Loops nested `depth` deep, each with its own iteration variable, the innermost
    step reading all of them: no iteration is like another, 1000^depth in all. Only
    the request's time budget ends it."""
    names = [f"i{level}" for level in range(1, depth + 1)]
    condition = {"and": [{"var": name, "gt": 10**6} for name in names]}
    body: list[dict[str, Any]] = [step("inner", runCondition=condition)]
    for level in range(depth, 0, -1):
        outer = names[: level - 1]
        test: Any = {"and": [{"var": "go", "equals": True}, *({"var": n, "gte": 1} for n in outer)]}
        body = [_while(level, test, max_iterations, body, iterationVar=names[level - 1])]
    return workflow([step("first"), *body, step("last")], "entangled-loops")


def wide_condition(terms: int, *, text: bool = False) -> dict[str, Any]:
    """One runCondition: an `or` of `terms` comparisons (JSON or text form)."""
    condition: Any = (
        " or ".join(f"v{i} == {i}" for i in range(terms))
        if text
        else {"or": [{"var": f"v{i}", "equals": i} for i in range(terms)]}
    )
    return workflow([step("wide", runCondition=condition)], "wide-condition")


def many_steps(count: int, prompt_chars: int = 250) -> dict[str, Any]:
    return workflow(
        [
            step(f"step-{i}", prompt="p" * prompt_chars, runCondition={"var": f"x{i}", "equals": "y"})
            for i in range(count)
        ],
        "many-steps",
    )


def deep_condition(depth: int) -> dict[str, Any]:
    condition: Any = {"var": "x", "equals": 1}
    for _ in range(depth):
        condition = {"not": condition}
    return workflow([step("deep", runCondition=condition)], "deep-condition")


def schema_rule(schema: dict[str, Any], wid: str) -> dict[str, Any]:
    rule = {"type": "schema", "schema": schema, "message": "Reply with the JSON asked for"}
    return workflow([step("answer", validationCriteria=[rule])], wid)


def self_reference() -> dict[str, Any]:
    """A schema that is its own `$ref`: checking any value never ends."""
    return schema_rule({"$ref": "#"}, "self-reference")


def doubling_schema(depth: int) -> dict[str, Any]:
    """Each level an `anyOf` of the next level twice: 2^depth checks of one value."""
    definitions: dict[str, Any] = {f"d{depth}": {"type": "string"}}
    for level in range(depth - 1, -1, -1):
        ref = {"$ref": f"#/definitions/d{level + 1}"}
        definitions[f"d{level}"] = {"anyOf": [dict(ref), {"allOf": [dict(ref)]}]}
    return schema_rule({"definitions": definitions, "$ref": "#/definitions/d0"}, "doubling-schema")


def doubling_by_depth() -> dict[str, Any]:
    """Two branches per level of the value, each going one level down: fine by
    `handrail check` (one value is checked a few times), 2^depth on a deep output."""
    branch = {"type": "object", "properties": {"a": {"$ref": "#"}}}
    return schema_rule({"type": "object", "anyOf": [branch, {"allOf": [branch]}]}, "doubling-by-depth")


def recursive_properties() -> dict[str, Any]:
    """A schema that follows the value down through `a`, as deep as the value goes."""
    return schema_rule({"type": "object", "properties": {"a": {"$ref": "#"}}}, "recursive-properties")


def nested_output(depth: int, leaf: Any = 1) -> str:
    return '{"a":' * depth + json_dumps(leaf) + "}" * depth


def json_dumps(value: Any) -> str:
    import json

    return json.dumps(value)


def catastrophic_keys() -> dict[str, Any]:
    """patternProperties with a pattern that backtracks exponentially on keys like
    `kkk...kx`: each search runs to the per-search limit."""
    return schema_rule({"type": "object", "patternProperties": {"^(?=k)(k|kk)+$": {}}}, "catastrophic-keys")


def catastrophic_output(keys: int) -> str:
    import json

    return json.dumps({"k" * 40 + f"x{i}": i for i in range(keys)})


def backtracking_keys() -> dict[str, Any]:
    """patternProperties whose pattern only the backtracking engine can run."""
    return schema_rule(
        {"type": "object", "patternProperties": {"^(?=k)k\\d+$": {"type": "integer"}}}, "lookahead-keys"
    )


def many_keys_output(keys: int) -> str:
    import json

    return json.dumps({f"k{i}": i for i in range(keys)})


def amplifying_template(repeats: int = 1600) -> dict[str, Any]:
    """`{{x}}` as often as a prompt's 8,192 characters allow: times a 1 MB context value."""
    return workflow([step("loud", prompt="{{x}}" * repeats)], "amplifying-template")


def word_boundary() -> dict[str, Any]:
    rule = {"type": "regex", "pattern": "\\bcafé\\b", "message": "Name the café"}
    return workflow([step("words", validationCriteria=[rule])], "word-boundary")


def all_documents() -> list[dict[str, Any]]:
    """One of each, sized to hurt a server without bounds, yet each under 1 MB."""
    return [
        nested_loops(3),
        nested_loops(3, reads_iteration=True),
        wide_condition(16_000),
        wide_condition(8_000, text=True),
        many_steps(2_700),
        deep_condition(40),
        self_reference(),
        doubling_schema(24),
        doubling_by_depth(),
        recursive_properties(),
        catastrophic_keys(),
        entangled_loops(3),
        backtracking_keys(),
        amplifying_template(),
        word_boundary(),
    ]


def random_document(rng: random.Random) -> dict[str, Any]:
    """A smaller hostile document of a random kind, for the fuzzers' many rounds."""
    kind = rng.randrange(8)
    if kind == 0:
        return nested_loops(rng.randint(1, 4), rng.choice([1, 10, 1000]), reads_iteration=rng.random() < 0.5)
    if kind == 1:
        return wide_condition(rng.randint(1, 3000), text=rng.random() < 0.5)
    if kind == 2:
        return many_steps(rng.randint(1, 300), rng.randint(1, 400))
    if kind == 3:
        return deep_condition(rng.randint(1, 200))
    if kind == 4:
        return self_reference()
    if kind == 5:
        return doubling_schema(rng.randint(1, 30))
    if kind == 6:
        return amplifying_template(rng.randint(1, 1600))
    pattern = rng.choice(["(a+)+$", "(?=a)a", "\\bé\\b", "(x|xx)+y", "(?<=a)b", "^(\\w+\\s?)*$"])
    rule = {"type": "regex", "pattern": pattern, "message": "m"}
    return workflow([step("random-regex", validationCriteria=[rule])], "random-regex")
