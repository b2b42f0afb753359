"""workflow_next, called as a library: decisions, loops, the state contract, and its errors."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from handrail.compiler import compile_path, compile_text
from handrail.model.errors import HandrailError, InvalidParams, StateError, StepNotFound
from handrail.model.workflow import Loop, Step, Workflow
from tests.conftest import corpus_accepted
from tests.helpers.wire import wire_next

Result = dict[str, Any]


def build(steps: list[dict[str, Any]], **extra: Any) -> Workflow:
    document = {
        "id": "unit-flow",
        "name": "Unit Flow",
        "description": "A workflow for a unit test.",
        "version": "1.0.0",
        **extra,
        "steps": steps,
    }
    compiled = compile_text(json.dumps(document))
    assert compiled.workflow is not None, [d.render() for d in compiled.errors]
    return compiled.workflow


def step(sid: str, **fields: Any) -> dict[str, Any]:
    return {"id": sid, "title": sid.capitalize(), "prompt": fields.pop("prompt", f"Do {sid}."), **fields}


def loop(lid: str, config: dict[str, Any], body: Any, **fields: Any) -> dict[str, Any]:
    return {
        "id": lid,
        "type": "loop",
        "title": fields.pop("title", lid),
        "loop": config,
        "body": body,
        **fields,
    }


def after(workflow: Workflow, result: Result, context: Mapping[str, Any] | None = None) -> Result:
    """The contract: send back completedSteps plus the step just done, and the state."""
    done = list(result["completedSteps"])
    if result["step"] is not None:
        done.append(result["step"]["id"])
    return wire_next(workflow, done, context or {}, state=result["state"])


def offered(workflow: Workflow, context: Mapping[str, Any] | None = None, limit: int = 100) -> list[str]:
    """Step ids offered by a client that follows the contract with a fixed context."""
    ids: list[str] = []
    result = wire_next(workflow, [], context or {})
    while result["step"] is not None and len(ids) < limit:
        ids.append(result["step"]["id"])
        result = after(workflow, result, context)
    assert result["isComplete"], result["guidance"]
    return ids


# ---------------------------------------------------------------- plain steps


def test_the_first_call_offers_the_first_step_with_the_workflow_header() -> None:
    workflow = build([step("one"), step("two")], metaGuidance=["Be brief"])
    result = wire_next(workflow, [], {})
    assert result["step"]["id"] == "one"
    assert result["isComplete"] is False
    assert result["completedSteps"] == [] and result["state"] == {"loops": []}
    assert result["guidance"]["prompt"].startswith("Workflow: Unit Flow — A workflow for a unit test.")
    assert "Throughout this workflow:\n- Be brief" in result["guidance"]["prompt"]
    later = after(workflow, result)
    assert later["guidance"]["prompt"] == "## Two\nDo two."


def test_a_step_whose_run_condition_does_not_hold_is_skipped() -> None:
    workflow = build([step("one"), step("two", runCondition={"var": "go", "equals": True}), step("three")])
    assert offered(workflow, {"go": False}) == ["one", "three"]
    assert offered(workflow, {"go": True}) == ["one", "two", "three"]


def test_a_skipped_step_comes_back_when_the_context_changes() -> None:
    workflow = build([step("one", runCondition="mode == 'full'"), step("two")])
    first = wire_next(workflow, [], {"mode": "lite"})
    assert first["step"]["id"] == "two"
    done = after(workflow, first, {"mode": "lite"})
    assert done["isComplete"] is True and done["step"] is None
    again = wire_next(workflow, done["completedSteps"], {"mode": "full"}, state=done["state"])
    assert again["step"]["id"] == "one"


def test_a_completed_workflow_says_so_with_empty_criteria() -> None:
    workflow = build([step("one")])
    result = wire_next(workflow, ["one"], {})
    assert result["step"] is None and result["isComplete"] is True
    assert result["guidance"]["requiresConfirmation"] is False
    assert result["guidance"]["validationCriteria"] == []
    assert "complete" in result["guidance"]["prompt"]


def test_a_workflow_blocked_on_missing_context_is_never_complete() -> None:
    workflow = build([step("one", runCondition={"var": "scope", "equals": "large"})])
    result = wire_next(workflow, [], {})
    assert result["step"] is None
    assert result["isComplete"] is False
    assert result["guidance"]["missingContext"] == {"scope": ["large"]}


def test_missing_context_names_every_variable_and_every_value_looked_for() -> None:
    workflow = build(
        [
            step("one", runCondition={"var": "scope", "equals": "large"}),
            step(
                "two",
                runCondition={
                    "or": [{"var": "scope", "equals": "small"}, {"var": "user.role", "in": ["a", "b"]}]
                },
            ),
        ]
    )
    result = wire_next(workflow, [], {})
    assert result["guidance"]["missingContext"] == {"scope": ["large", "small"], "user.role": ["a", "b"]}
    assert '- `user.role` (the conditions look for "a", "b")' in result["guidance"]["prompt"]


def test_a_skipped_step_whose_variables_are_all_set_does_not_block() -> None:
    workflow = build([step("one", runCondition={"var": "scope", "equals": "large"})])
    assert wire_next(workflow, [], {"scope": "small"})["isComplete"] is True


def test_a_condition_decided_by_the_variables_set_does_not_block_on_the_unset_ones() -> None:
    workflow = build([step("one", runCondition="mode == 'careful' and reviewer")])
    assert wire_next(workflow, [], {"mode": "quick"})["isComplete"] is True
    blocked = wire_next(workflow, [], {"mode": "careful"})
    assert blocked["guidance"]["missingContext"] == {"reviewer": [True]}


def test_missing_context_leaves_out_an_or_that_already_holds() -> None:
    workflow = build([step("one", runCondition="(score >= 7 or accepted) and reviewer and level == 'high'")])
    blocked = wire_next(workflow, [], {"score": 9})
    assert blocked["guidance"]["missingContext"] == {"reviewer": [True], "level": ["high"]}
    blocked = wire_next(workflow, [], {"score": 2, "reviewer": "ana"})
    assert blocked["guidance"]["missingContext"] == {"accepted": [True], "level": ["high"]}
    assert wire_next(workflow, [], {"score": 9, "level": "low"})["isComplete"] is True


def test_a_while_loop_decided_false_by_what_is_set_finishes_without_waiting() -> None:
    config = {"type": "while", "condition": "mode == 'retry' and more", "maxIterations": 3}
    loop_node = loop("again", config, "body")
    workflow = build([loop_node, step("body"), step("end")])
    assert wire_next(workflow, [], {"mode": "done"})["step"]["id"] == "end"


def test_requires_confirmation_is_evaluated_against_the_context() -> None:
    workflow = build([step("one", requireConfirmation={"var": "risk", "gte": 3})])
    assert wire_next(workflow, [], {"risk": 5})["guidance"]["requiresConfirmation"] is True
    assert wire_next(workflow, [], {"risk": 1})["guidance"]["requiresConfirmation"] is False
    assert wire_next(workflow, [], {})["step"]["requireConfirmation"] is False


def test_model_hint_comes_from_the_step_else_the_workflow() -> None:
    workflow = build([step("one", modelHint="big"), step("two")], modelHint="small")
    first = wire_next(workflow, [], {})
    assert first["guidance"]["modelHint"] == "big"
    assert after(workflow, first)["guidance"]["modelHint"] == "small"
    assert "modelHint" not in wire_next(build([step("one")]), [], {})["guidance"]


def test_validation_criteria_are_listed_in_words_and_in_the_prompt() -> None:
    rule = {"type": "contains", "value": "Done", "message": "Say Done"}
    result = wire_next(build([step("one", validationCriteria=[rule])]), [], {})
    assert result["guidance"]["validationCriteria"] == ['Say Done (contains "Done")']
    assert 'Your output must meet:\n- Say Done (contains "Done")' in result["guidance"]["prompt"]


def test_a_repeated_completed_step_id_counts_once() -> None:
    workflow = build([step("one"), step("two")])
    result = wire_next(workflow, ["one", "one"], {})
    assert result["step"]["id"] == "two" and result["completedSteps"] == ["one"]


def test_next_leaves_its_arguments_untouched() -> None:
    workflow = build(
        [loop("lap", {"type": "for", "count": 2, "maxIterations": 2}, [step("body")]), step("end")]
    )
    first = wire_next(workflow, [], {})
    completed, state, context = ["body"], copy.deepcopy(first["state"]), {"x": [1]}
    frozen = (list(completed), copy.deepcopy(state), copy.deepcopy(context))
    wire_next(workflow, completed, context, state=state)
    assert (completed, state, context) == frozen


# ---------------------------------------------------------------- errors


def test_an_unknown_current_step_is_step_not_found() -> None:
    with pytest.raises(StepNotFound) as caught:
        wire_next(build([step("one")]), [], {}, current_step="nope")
    assert caught.value.code == -32003 and caught.value.data["stepId"] == "nope"


def test_an_unknown_completed_step_is_step_not_found() -> None:
    with pytest.raises(StepNotFound) as caught:
        wire_next(build([step("one")]), ["one", "ghost"], {})
    assert caught.value.data["stepId"] == "ghost"


@pytest.mark.parametrize("context", [["not", "an", "object"], [], "", 0])
def test_a_context_that_is_not_an_object_is_invalid_params(context: Any) -> None:
    with pytest.raises(InvalidParams):
        wire_next(build([step("one")]), [], context)


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ("garbage", "state must be an object"),
        ([], "state must be an object"),
        ({"loops": [], "extra": 1}, "state has unknown fields: extra"),
        ({"loops": "lap"}, "state.loops must be a list"),
        ({"loops": [["lap", 1]]}, "state.loops[0] must be an object with exactly `id` and `iteration`"),
        ({"loops": [{"id": "lap"}]}, "state.loops[0] must be an object with exactly `id` and `iteration`"),
        ({"loops": [{"id": "lap", "iteration": 1, "x": 0}]}, "exactly `id` and `iteration`"),
        ({"loops": [{"id": 7, "iteration": 1}]}, "state.loops[0] names `7`, which is no loop"),
        (
            {"loops": [{"id": "lap", "iteration": True}]},
            "state.loops[0]: iteration true is not a whole number",
        ),
        ({"loops": [{"id": "lap", "iteration": "1"}]}, 'iteration "1" is not a whole number'),
        ({"loops": [{"id": "lap", "iteration": 1.5}]}, "iteration 1.5 is not a whole number"),
        ({"loops": [{"id": "lap", "iteration": 0}]}, "iteration 0 is outside 1..3"),
        ({"loops": [{"id": "lap", "iteration": 4.0}]}, "iteration 4 is outside 1..3"),
    ],
)
def test_state_of_the_wrong_shape_is_a_state_error_saying_what_is_wrong(state: Any, message: str) -> None:
    workflow = build(
        [loop("lap", {"type": "while", "condition": "go == true", "maxIterations": 3}, [step("body")])]
    )
    with pytest.raises(StateError) as caught:
        wire_next(workflow, [], {}, state=state)
    assert caught.value.code == -32005
    assert message in caught.value.message


def test_a_body_step_completed_without_state_is_a_state_error() -> None:
    workflow = build(
        [loop("lap", {"type": "for", "count": 2, "maxIterations": 2}, [step("body"), step("more")])]
    )
    with pytest.raises(StateError, match="step `body` belongs to loop `lap`, which is not running"):
        wire_next(workflow, ["body"], {})


def test_an_iteration_beyond_a_literal_count_is_a_state_error() -> None:
    workflow = build([loop("lap", {"type": "for", "count": 2, "maxIterations": 9}, [step("body")])])
    with pytest.raises(StateError, match=r"iteration 3 is outside 1\.\.2"):
        wire_next(workflow, [], {}, state={"loops": [{"id": "lap", "iteration": 3}]})


def test_an_integral_float_iteration_is_read_as_a_whole_number() -> None:
    workflow = build([loop("lap", {"type": "for", "count": 2, "maxIterations": 2}, [step("body")])])
    result = wire_next(workflow, [], {}, state={"loops": [{"id": "lap", "iteration": 2.0}]})
    assert result["loop"]["iteration"] == 2 and result["state"] == {"loops": [{"id": "lap", "iteration": 2}]}


def test_an_empty_state_object_means_no_loop_is_running() -> None:
    workflow = build([step("one")])
    assert wire_next(workflow, [], {}, state={})["step"]["id"] == "one"


# ---------------------------------------------------------------- loops


def test_a_for_loop_runs_its_body_count_times_then_moves_on() -> None:
    workflow = build(
        [
            loop("lap", {"type": "for", "count": 3, "maxIterations": 5}, [step("aaa"), step("bbb")]),
            step("end"),
        ]
    )
    assert offered(workflow) == ["aaa", "bbb"] * 3 + ["end"]


def test_a_for_loop_count_from_the_context_may_be_a_numeric_string() -> None:
    workflow = build([loop("lap", {"type": "for", "count": "n", "maxIterations": 5}, [step("body")])])
    assert offered(workflow, {"n": "2"}) == ["body", "body"]
    assert offered(workflow, {"n": 0}) == []


def test_a_for_loop_whose_count_vanishes_mid_loop_holds_its_place_and_blocks() -> None:
    workflow = build(
        [loop("lap", {"type": "for", "count": "n", "maxIterations": 5}, [step("body")]), step("end")]
    )
    first = wire_next(workflow, [], {"n": 3})
    blocked = after(workflow, first, {})
    assert blocked["step"] is None and blocked["isComplete"] is False
    assert blocked["guidance"]["missingContext"] == {"n": []}
    assert blocked["state"] == {"loops": [{"id": "lap", "iteration": 1}]}
    assert blocked["completedSteps"] == ["body"]
    resumed = after(workflow, blocked, {"n": 3})
    assert resumed["step"]["id"] == "body" and resumed["loop"]["iteration"] == 2


def test_until_is_checked_before_the_first_iteration() -> None:
    workflow = build(
        [loop("lap", {"type": "until", "condition": "done == true", "maxIterations": 5}, [step("body")])]
    )
    result = wire_next(workflow, [], {"done": True})
    assert result["isComplete"] is True and result["completedSteps"] == ["lap"]
    assert offered(workflow, {}) == ["body"] * 5, "unset, `done` does not hold: the loop runs to its limit"


def test_an_until_loop_whose_condition_holds_is_finished_even_if_it_reads_unset_variables() -> None:
    config = {"type": "until", "condition": "found == true or tries >= 3", "maxIterations": 5}
    workflow = build([loop("lap", config, [step("body")]), step("end")])
    result = wire_next(workflow, [], {"found": True})
    assert result["step"]["id"] == "end"
    assert result["completedSteps"] == ["lap"]


def test_a_while_loop_on_an_unset_variable_is_undecided_not_finished() -> None:
    workflow = build(
        [loop("lap", {"type": "while", "condition": "more == true", "maxIterations": 5}, [step("body")])]
    )
    result = wire_next(workflow, [], {})
    assert result["isComplete"] is False and result["completedSteps"] == []
    assert result["guidance"]["missingContext"] == {"more": [True]}
    assert wire_next(workflow, [], {"more": False})["completedSteps"] == ["lap"]


def test_a_while_loop_stops_when_its_condition_turns_false() -> None:
    workflow = build(
        [loop("lap", {"type": "while", "condition": "more == true", "maxIterations": 5}, [step("body")])]
    )
    first = wire_next(workflow, [], {"more": True})
    second = after(workflow, first, {"more": True})
    assert second["loop"]["iteration"] == 2
    assert after(workflow, second, {"more": False})["isComplete"] is True


def test_a_loop_is_stopped_at_max_iterations_and_the_guidance_says_so() -> None:
    workflow = build(
        [
            loop("lap", {"type": "while", "condition": "more == true", "maxIterations": 2}, [step("body")]),
            step("end"),
        ]
    )
    assert offered(workflow, {"more": True}) == ["body", "body", "end"]
    result = wire_next(workflow, [], {"more": True})
    result = after(workflow, after(workflow, result, {"more": True}), {"more": True})
    assert result["step"]["id"] == "end"
    assert "Loop `lap` stopped at its limit of 2 iterations." in result["guidance"]["prompt"]


def test_a_count_beyond_max_iterations_is_cut_at_max_iterations() -> None:
    workflow = build([loop("lap", {"type": "for", "count": "n", "maxIterations": 2}, [step("body")])])
    assert offered(workflow, {"n": 10}) == ["body", "body"]


def test_a_loop_ending_exactly_at_max_iterations_adds_no_note() -> None:
    workflow = build([loop("lap", {"type": "for", "count": 2, "maxIterations": 2}, [step("body")])])
    result = wire_next(workflow, [], {})
    result = after(workflow, after(workflow, result))
    assert result["isComplete"] is True
    assert "stopped at its limit" not in result["guidance"]["prompt"]


def test_a_foreach_loop_exposes_item_index_and_iteration() -> None:
    config = {
        "type": "forEach",
        "items": "xs",
        "itemVar": "x",
        "indexVar": "i",
        "iterationVar": "n",
        "maxIterations": 5,
    }
    workflow = build([loop("lap", config, [step("body", prompt="{{x}} {{i}} {{n}}")])])
    first = wire_next(workflow, [], {"xs": ["a", "b"]})
    assert first["step"]["prompt"] == "a 0 1"
    assert first["loop"] == {"id": "lap", "title": "lap", "iteration": 1, "n": 1, "i": 0, "x": "a"}
    assert after(workflow, first, {"xs": ["a", "b"]})["step"]["prompt"] == "b 1 2"


def test_loop_variables_are_visible_to_body_run_conditions() -> None:
    config = {"type": "for", "count": 3, "maxIterations": 3, "iterationVar": "round"}
    body = [step("odd", runCondition="round != 2"), step("even", runCondition="round == 2")]
    assert offered(build([loop("lap", config, body)])) == ["odd", "even", "odd"]


def test_an_empty_foreach_list_finishes_the_loop_at_once() -> None:
    workflow = build([loop("lap", {"type": "forEach", "items": "xs", "maxIterations": 5}, [step("body")])])
    result = wire_next(workflow, [], {"xs": []})
    assert result["isComplete"] is True and result["completedSteps"] == ["lap"]


def test_a_foreach_over_something_that_is_not_a_list_blocks_with_the_reason() -> None:
    workflow = build([loop("lap", {"type": "forEach", "items": "xs", "maxIterations": 5}, [step("body")])])
    result = wire_next(workflow, [], {"xs": {"a": 1}})
    assert result["isComplete"] is False
    assert "- `xs` (it is an object, it must be a list)" in result["guidance"]["prompt"]


def test_a_loop_whose_run_condition_fails_is_skipped_not_finished() -> None:
    workflow = build(
        [
            loop(
                "lap",
                {"type": "for", "count": 1, "maxIterations": 1},
                [step("body")],
                runCondition="on == true",
            )
        ]
    )
    result = wire_next(workflow, [], {"on": False})
    assert result["isComplete"] is True and result["completedSteps"] == []
    assert wire_next(workflow, [], {"on": True})["step"]["id"] == "body"


def test_a_body_step_waiting_on_context_holds_the_iteration() -> None:
    body = [step("aaa"), step("bbb", runCondition={"var": "x", "equals": "go"})]
    workflow = build([loop("lap", {"type": "for", "count": 3, "maxIterations": 3}, body), step("end")])
    first = wire_next(workflow, [], {})
    blocked = after(workflow, first, {})
    assert blocked["step"] is None and blocked["isComplete"] is False
    assert blocked["guidance"]["missingContext"] == {"x": ["go"]}
    assert blocked["state"] == {"loops": [{"id": "lap", "iteration": 1}]}
    resumed = after(workflow, blocked, {"x": "go"})
    assert resumed["step"]["id"] == "bbb" and resumed["loop"]["iteration"] == 1


def test_an_inner_loop_that_cannot_start_holds_the_outer_iteration() -> None:
    inner = loop("inner", {"type": "forEach", "items": "files", "maxIterations": 3}, [step("leaf")])
    workflow = build([loop("outer", {"type": "for", "count": 2, "maxIterations": 2}, [step("head"), inner])])
    first = wire_next(workflow, [], {})
    blocked = after(workflow, first, {})
    assert blocked["isComplete"] is False and blocked["guidance"]["missingContext"] == {"files": []}
    assert blocked["state"] == {"loops": [{"id": "outer", "iteration": 1}]}


def test_an_earlier_step_offered_during_a_loop_is_shown_outside_the_loop() -> None:
    workflow = build(
        [
            step("pre", prompt="pre {{currentItem}}", runCondition="ready == true"),
            loop(
                "lap",
                {"type": "forEach", "items": "xs", "maxIterations": 3},
                [step("body", prompt="{{currentItem}}")],
            ),
        ]
    )
    first = wire_next(workflow, [], {"ready": False, "xs": ["a", "b"]})
    earlier = after(workflow, first, {"ready": True, "xs": ["a", "b"]})
    assert earlier["step"]["id"] == "pre"
    assert earlier["step"]["prompt"] == "pre [unset: currentItem]"
    assert "loop" not in earlier
    assert "Loop `" not in earlier["guidance"]["prompt"]
    assert earlier["state"] == {"loops": [{"id": "lap", "iteration": 1}]}
    assert after(workflow, earlier, {"ready": True, "xs": ["a", "b"]})["step"]["prompt"] == "b"


def test_nested_foreach_guidance_shows_each_loop_with_its_own_item() -> None:
    inner = loop(
        "inner",
        {"type": "forEach", "items": "currentItem.files", "maxIterations": 3},
        [step("leaf")],
        title="In",
    )
    workflow = build(
        [loop("outer", {"type": "forEach", "items": "groups", "maxIterations": 3}, [inner], title="Out")]
    )
    result = wire_next(workflow, [], {"groups": [{"files": ["f1"]}]})
    prompt = result["guidance"]["prompt"]
    assert 'Loop `Out`: iteration 1 (at most 3); currentItem = {"files": ["f1"]} (currentIndex = 0)' in prompt
    assert 'Loop `In`: iteration 1 (at most 3); currentItem = "f1" (currentIndex = 0)' in prompt


def test_a_loop_body_named_by_reference_runs_the_referenced_step() -> None:
    workflow = build(
        [loop("lap", {"type": "for", "count": 2, "maxIterations": 2}, "shared"), step("shared"), step("end")]
    )
    assert offered(workflow) == ["shared", "shared", "end"]


def test_a_later_loop_waits_while_another_loop_of_its_level_runs() -> None:
    workflow = build(
        [
            loop(
                "first", {"type": "for", "count": 1, "maxIterations": 1}, [step("aaa")], runCondition="x == 1"
            ),
            loop("second", {"type": "for", "count": 2, "maxIterations": 2}, [step("bbb")]),
        ]
    )
    running = wire_next(workflow, [], {"x": 0})
    assert running["state"] == {"loops": [{"id": "second", "iteration": 1}]}
    reappears = after(workflow, running, {"x": 1})
    assert reappears["step"]["id"] == "bbb", "the running loop keeps its level until it ends"


# ---------------------------------------------------------------- properties


def _bound(workflow: Workflow, ids: tuple[str, ...]) -> int:
    """How many steps a walk of `ids` can offer at most (each loop at most maxIterations times)."""
    total = 0
    for sid in ids:
        node = workflow.nodes[sid]
        total += _bound(workflow, node.body) * node.max_iterations if isinstance(node, Loop) else 1
    return total


VARIABLES = ("mode", "flag", "n", "xs")
VALUES = st.sampled_from(["a", "b", True, False, 0, 1, 2, [], ["p"], ["p", "q"], None, "2"])


@st.composite
def conditions(draw: st.DrawFn) -> dict[str, Any]:
    name = draw(st.sampled_from(("mode", "flag", "n")))
    op = draw(st.sampled_from(("equals", "not_equals", "gt")))
    value = draw(st.integers(0, 2)) if op == "gt" else draw(st.sampled_from(["a", "b", True, 1]))
    return {"var": name, op: value}


@st.composite
def nodes(draw: st.DrawFn, depth: int, counter: list[int]) -> dict[str, Any]:
    counter[0] += 1
    sid = f"node-{counter[0]}"
    extra: dict[str, Any] = {}
    if draw(st.booleans()):
        extra["runCondition"] = draw(conditions())
    if depth >= 2 or draw(st.integers(0, 2)) > 0:
        return step(sid, **extra)
    kind = draw(st.sampled_from(("while", "until", "for", "forEach")))
    config: dict[str, Any] = {"type": kind, "maxIterations": draw(st.integers(1, 3))}
    if kind in ("while", "until"):
        config["condition"] = draw(conditions())
    elif kind == "for":
        config["count"] = draw(st.sampled_from([0, 1, 2, "n"]))
    else:
        config["items"] = "xs"
    body = draw(st.lists(nodes(depth + 1, counter), min_size=1, max_size=3))
    return loop(sid, config, body, **extra)


@st.composite
def workflows(draw: st.DrawFn) -> Workflow:
    counter = [0]
    steps = draw(st.lists(nodes(0, counter), min_size=1, max_size=4))
    compiled = compile_text(
        json.dumps({"id": "prop-flow", "name": "P", "description": "d", "version": "1.0.0", "steps": steps})
    )
    assume(compiled.workflow is not None)
    assert compiled.workflow is not None
    return compiled.workflow


def _fill(name: str, workflow: Workflow, draw: st.DrawFn) -> Any:
    loops = [n for n in workflow.nodes.values() if isinstance(n, Loop)]
    if any(lp.items == name for lp in loops):
        return draw(st.lists(st.sampled_from(["p", "q"]), max_size=2))
    if any(lp.count == name for lp in loops):
        return draw(st.integers(0, 3))
    return draw(VALUES)


def _drive(workflow: Workflow, context: dict[str, Any], data: st.DataObject, changes: int) -> int:
    """A client that follows the contract, changes the context at random a bounded number of
    times, and sets what the engine says is missing; returns the number of calls."""
    completed: list[str] = []
    state: dict[str, Any] | None = None
    limit = (_bound(workflow, workflow.sequence) + 1) * (len(VARIABLES) + changes + 2)
    for calls in range(1, limit + 1):
        result = wire_next(workflow, completed, context, state=state)
        if result["isComplete"]:
            assert result["step"] is None
            return calls
        if changes and data.draw(st.booleans(), label="change context"):
            changes -= 1
            name = data.draw(st.sampled_from(VARIABLES), label="variable")
            context[name] = _fill(name, workflow, data.draw)
        if result["step"] is None:
            missing = result["guidance"]["missingContext"]
            assert missing, "blocked without naming what is missing"
            for name in missing:
                context[name] = _fill(name, workflow, data.draw)
            completed, state = list(result["completedSteps"]), result["state"]
            continue
        assert isinstance(workflow.nodes[result["step"]["id"]], Step)
        completed = [*result["completedSteps"], result["step"]["id"]]
        state = result["state"]
    raise AssertionError(f"not complete after {limit} calls")


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflows(), st.data())
def test_a_client_following_the_contract_always_finishes_within_the_iteration_bound(
    workflow: Workflow, data: st.DataObject
) -> None:
    context = {
        name: _fill(name, workflow, data.draw) for name in data.draw(st.sets(st.sampled_from(VARIABLES)))
    }
    _drive(workflow, context, data, changes=data.draw(st.integers(0, 4)))


CORPUS_WITH_LOOPS = [p for p in corpus_accepted() if '"loop"' in p.read_text("utf-8")]


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@pytest.mark.corpus
@given(st.sampled_from(CORPUS_WITH_LOOPS or [Path("missing")]), st.data())
def test_corpus_workflows_with_loops_finish_for_any_contract_following_client(
    path: Path, data: st.DataObject
) -> None:
    assume(path.exists())
    workflow = compile_path(path).workflow
    assert workflow is not None
    seen: list[str] = []

    def fill(name: str) -> Any:
        loops = [n for n in workflow.nodes.values() if isinstance(n, Loop)]
        if any(lp.items == name for lp in loops):
            return data.draw(st.lists(st.text("abc", max_size=2), max_size=3))
        if any(lp.count == name for lp in loops):
            return data.draw(st.integers(0, 3))
        looked_for = data.draw(st.sampled_from([True, False, "x", 0, 5]))
        return looked_for

    context: dict[str, Any] = {}
    completed: list[str] = []
    state: dict[str, Any] | None = None
    for _ in range(2000):
        result = wire_next(workflow, completed, context, state=state)
        if result["isComplete"]:
            return
        if result["step"] is None:
            for name in result["guidance"]["missingContext"]:
                parts = name.split(".")
                target = context
                for part in parts[:-1]:
                    nested = target.get(part)
                    target[part] = nested if isinstance(nested, dict) else {}
                    target = target[part]
                target[parts[-1]] = fill(name)
            completed, state = list(result["completedSteps"]), result["state"]
            continue
        seen.append(result["step"]["id"])
        completed, state = [*result["completedSteps"], result["step"]["id"]], result["state"]
    raise AssertionError(f"{path.name}: not complete after 2000 calls (offered {seen[-10:]})")


LOOPY = build(
    [
        step("intro"),
        loop(
            "outer",
            {"type": "forEach", "items": "xs", "maxIterations": 3},
            [step("head"), loop("inner", {"type": "for", "count": 2, "maxIterations": 2}, [step("leaf")])],
        ),
        loop("poll", {"type": "while", "condition": "go == true", "maxIterations": 2}, "tail"),
        step("tail"),
    ]
)
IDS = st.sampled_from([*LOOPY.nodes, "ghost", ""])
JUNK = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 5) | st.text(max_size=3) | IDS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["id", "iteration", "loops", "x"]), inner, max_size=3)
    ),
    max_leaves=8,
)
FRAMES = st.lists(st.fixed_dictionaries({"id": IDS, "iteration": st.integers(-1, 4)}), max_size=3)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.lists(IDS, max_size=6),
    st.one_of(st.none(), JUNK, st.fixed_dictionaries({"loops": FRAMES})),
    st.dictionaries(st.sampled_from(["xs", "go", "n"]), JUNK, max_size=3),
    st.one_of(st.none(), IDS),
)
def test_next_raises_nothing_but_handrail_errors_whatever_it_is_sent(
    completed: list[str], state: Any, context: dict[str, Any], current: str | None
) -> None:
    try:
        result = wire_next(LOOPY, completed, context, state=state, current_step=current)
    except HandrailError as exc:
        assert exc.code in (-32602, -32003, -32005)
        assert exc.message
        return
    json.dumps(result)  # the result is plain JSON
    assert set(result) >= {"step", "guidance", "isComplete", "completedSteps", "state"}


def test_a_loop_that_requires_confirmation_asks_once_as_it_is_entered() -> None:
    document = {
        "id": "confirm-loop",
        "name": "n",
        "description": "d",
        "version": "1.0.0",
        "steps": [
            {
                "id": "the-loop",
                "type": "loop",
                "title": "Loop",
                "loop": {"type": "for", "count": 2, "maxIterations": 5},
                "requireConfirmation": True,
                "body": [
                    {"id": "aaa", "title": "A", "prompt": "a"},
                    {"id": "bbb", "title": "B", "prompt": "b"},
                ],
            }
        ],
    }
    workflow = compile_text(json.dumps(document)).workflow
    assert workflow is not None
    first = wire_next(workflow, [], {})
    assert (first["step"]["id"], first["guidance"]["requiresConfirmation"]) == ("aaa", True)
    second = wire_next(workflow, [*first["completedSteps"], "aaa"], {}, state=first["state"])
    assert (second["step"]["id"], second["guidance"]["requiresConfirmation"]) == ("bbb", False)
    third = wire_next(workflow, [*second["completedSteps"], "bbb"], {}, state=second["state"])
    assert (third["step"]["id"], third["loop"]["iteration"]) == ("aaa", 2)
    assert third["guidance"]["requiresConfirmation"] is False
