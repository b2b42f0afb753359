"""The quick argument check says yes only where the full schema validator does, so
what a client sees (accepted, or the validator's error) is the same with or without it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import fastjsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handrail.model.errors import InvalidParams
from handrail.model.limits import Limits
from handrail.service.argument_check import Bounds, quick_check
from handrail.service.argument_limits import admission, check_limits
from handrail.service.definitions import tools
from tests.helpers.server import Server

SCHEMAS = {t["name"]: t["inputSchema"] for t in tools()}
# strings near each bound and pattern edge: a trailing newline (which `$` alone would
# let through), capitals, the empty string, 64 and 65 characters
TEXTS = st.sampled_from(
    ["", "ab", "abc", "abc\n", "ABC", "a-b-c", "a" * 64, "a" * 65, "é", "x y", "phase-0", "step_1"]
) | st.text(max_size=70)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXTS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXTS, inner, max_size=3),
    max_leaves=8,
)


def arguments(name: str) -> st.SearchStrategy[Any]:
    keys = [*SCHEMAS[name].get("properties", {}), "extra"]
    field = st.one_of(TEXTS, st.lists(TEXTS, max_size=4), VALUES)
    return st.dictionaries(st.sampled_from(keys), field, max_size=len(keys)) | VALUES


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_tool_schema_has_a_quick_check(name: str) -> None:
    assert quick_check(SCHEMAS[name]) is not None


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_the_quick_check_accepts_only_what_the_validator_accepts(name: str, data: st.DataObject) -> None:
    quick = quick_check(SCHEMAS[name])
    full = fastjsonschema.compile(SCHEMAS[name], use_default=False)
    value = data.draw(arguments(name))
    try:
        full(value)
        accepted = True
    except fastjsonschema.JsonSchemaValueException:
        accepted = False
    assert quick is not None
    if quick(value):
        assert accepted, value


def test_the_usual_arguments_are_accepted_quickly() -> None:
    quick = quick_check(SCHEMAS["workflow_next"])
    assert quick is not None
    assert quick({"workflowId": "abc", "completedSteps": ["a-1", "b"], "context": {"x": [1]}})
    assert not quick({"workflowId": "abc", "completedSteps": ["a", "a"]})
    assert not quick({"workflowId": "abc\n", "completedSteps": []})


def test_an_id_that_matched_is_admitted_again_and_one_that_did_not_is_refused_again() -> None:
    quick = quick_check(SCHEMAS["workflow_next"])
    assert quick is not None
    for _ in range(3):  # the second look finds the first's verdict kept, or not kept
        assert quick({"workflowId": "kept-id", "completedSteps": ["kept-id"]})
        assert not quick({"workflowId": "Not-An-Id", "completedSteps": []})
        assert not quick({"workflowId": "kept-id", "completedSteps": ["kept id"]})


def test_the_ids_kept_are_bounded_in_count_and_in_length() -> None:
    from handrail.service import argument_check

    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z]+$"}}}
    quick = quick_check(schema)
    assert quick is not None
    kept = next(v for v in quick.__globals__.values() if isinstance(v, set))
    assert quick({"a": "x" * (argument_check._SEEN_LENGTH + 1)})
    assert not kept  # too long to keep: matched, not remembered
    for i in range(argument_check._SEEN_COUNT + 50):
        assert quick({"a": "".join(chr(97 + int(d)) for d in str(i))})
    assert len(kept) == argument_check._SEEN_COUNT


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer"},
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "^(a|b)$"}}},
        {"type": "object", "properties": {"a": {"type": "string", "format": "uri"}}},
        {"type": "array", "items": {"type": "object"}, "uniqueItems": True},
    ],
)
def test_a_schema_beyond_the_quick_check_gets_none(schema: dict[str, Any]) -> None:
    assert quick_check(schema) is None


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with Server() as s:  # the bundled workflows: a clone alone passes
        s.initialize()
        yield s


@pytest.mark.slow
@pytest.mark.parametrize(
    ("arguments", "details"),
    [
        (
            {"workflowId": "coding-task", "completedSteps": ["a", "a"]},
            "completedSteps must contain unique items",
        ),
        ({"workflowId": "coding-task\n", "completedSteps": []}, "workflowId must match"),
        ({"workflowId": "ab", "completedSteps": []}, "workflowId must be longer than or equal to 3"),
        ({"workflowId": "abc", "completedSteps": [], "more": 1}, "unknown parameter more"),
    ],
)
def test_arguments_the_quick_check_refuses_get_the_validators_error_over_stdio(
    server: Server, arguments: dict[str, Any], details: str
) -> None:
    error = server.error("workflow_next", arguments)
    assert error["code"] == -32602, error
    assert error["data"]["details"].startswith(details), error


def test_arguments_the_quick_check_accepts_are_answered_over_stdio(server: Server) -> None:
    result = server.result(
        "workflow_next",
        {"workflowId": "coding-task", "completedSteps": [], "context": {"a": 1}},
    )
    assert result["step"]["id"] == "understand", result


# -- limits and schema told at once (argument_limits.admission) -------------------------

TIGHT = Limits(max_depth=4, max_output_length=6, max_completed_steps=2, max_context_bytes=24)


def _refused_by_limits(name: str, value: Any, limits: Limits) -> bool:
    try:
        check_limits(limits, name, value)
    except InvalidParams:
        return True
    return False


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(n for n in SCHEMAS if n != "workflow_validate_json"))
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_admission_says_yes_only_to_what_both_the_limits_and_the_schema_accept(
    name: str, data: st.DataObject
) -> None:
    admit = admission(TIGHT, name, SCHEMAS[name])
    full = fastjsonschema.compile(SCHEMAS[name], use_default=False)
    value = data.draw(arguments(name))
    assert admit is not None
    if admit(value):
        assert not _refused_by_limits(name, value, TIGHT), value
        full(value)  # raises if the schema refuses


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("workflow_validate", {"workflowId": "abc", "stepId": "abc", "output": "1234567"}),
        ("workflow_next", {"workflowId": "abc", "completedSteps": ["a", "b", "c"]}),
        ("workflow_next", {"workflowId": "abc", "completedSteps": [], "context": {"a": "x" * 30}}),
        ("workflow_next", {"workflowId": "abc", "completedSteps": [], "state": {"a": {"b": {"c": {}}}}}),
        ("workflow_next", {"workflowId": "abc", "completedSteps": [], "context": {"a": float("inf")}}),
    ],
)
def test_admission_leaves_what_is_over_a_limit_to_the_check_that_words_it(name: str, value: Any) -> None:
    admit = admission(TIGHT, name, SCHEMAS[name])
    assert admit is not None
    assert not admit(value)
    assert _refused_by_limits(name, value, TIGHT)


def test_admission_says_yes_to_the_usual_call_and_no_to_a_bracket_it_cannot_place() -> None:
    admit = admission(TIGHT, "workflow_next", SCHEMAS["workflow_next"])
    assert admit is not None
    assert admit({"workflowId": "abc", "completedSteps": ["a"], "context": {"a": [1]}})
    # three brackets in a string look like nesting: the long way looks, and lets it through
    tricky = {"workflowId": "abc", "completedSteps": [], "context": {"a": "[[["}}
    assert not admit(tricky)
    assert not _refused_by_limits("workflow_next", tricky, TIGHT)


def test_a_limit_on_an_argument_the_predicate_cannot_apply_gets_no_admission() -> None:
    schema = {"type": "object", "properties": {"context": {"type": "string"}}}
    assert quick_check(schema, Bounds(8, {}, {"context": 10})) is None
