"""The engine's typed results: what a library caller reads, and their one wire form."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from handrail.engine import (
    Guidance,
    LoopPosition,
    LoopView,
    MissingContext,
    NextResult,
    StepView,
    Verdict,
    next_step,
    validate_output,
)
from handrail.engine.result_json import next_json, verdict_json
from handrail.model.errors import StateError
from tests.engine.test_next import build, loop, step
from tests.helpers.wire import wire_next

FOR_EACH = build(
    [
        step("intro", agentRole="You are careful.", guidance=["Be brief."], modelHint="fast"),
        loop(
            "lap",
            {"type": "forEach", "items": "xs", "maxIterations": 5},
            [step("body", prompt="Handle {{currentItem}}.", runCondition="ready == true")],
            title="Each x",
        ),
    ]
)


def test_next_step_returns_a_step_view_and_guidance_with_python_values() -> None:
    result = next_step(FOR_EACH, [], {})
    assert isinstance(result, NextResult)
    assert result.completed_steps == () and result.loops == () and result.loop is None
    assert result.step == StepView(
        id="intro",
        title="Intro",
        prompt="Do intro.",
        agent_role="You are careful.",
        guidance=("Be brief.",),
        ask_for_files=False,
        require_confirmation=False,
        run_condition=None,
        function_references=(),
        checks=(),
    )
    assert isinstance(result.guidance, Guidance)
    assert result.guidance.model_hint == "fast" and result.guidance.missing == ()
    assert result.guidance.prompt.startswith("Workflow: Unit Flow")
    assert not result.is_complete and not result.blocked


def test_a_step_in_a_loop_comes_with_its_loop_and_the_loops_to_send_back() -> None:
    result = next_step(FOR_EACH, ["intro"], {"xs": ["a", "b"], "ready": True})
    assert result.step is not None and result.step.prompt == "Handle a."
    assert result.loops == (LoopPosition("lap", 1),)
    assert result.loop == LoopView(
        "lap", "Each x", 1, {"currentIteration": 1, "currentIndex": 0, "currentItem": "a"}
    )
    # the typed loops go back as `state`, exactly as their wire form does
    done = [*result.completed_steps, "body"]
    typed = next_step(FOR_EACH, done, {"xs": ["a", "b"], "ready": True}, state=result.loops)
    assert next_json(typed) == wire_next(
        FOR_EACH, done, {"xs": ["a", "b"], "ready": True}, state=next_json(result)["state"]
    )
    assert typed.loops == (LoopPosition("lap", 2),)


def test_typed_loops_that_do_not_fit_the_workflow_are_a_state_error() -> None:
    with pytest.raises(StateError, match="no loop of workflow"):
        next_step(FOR_EACH, ["intro"], {}, state=(LoopPosition("intro", 1),))


def test_a_blocked_result_names_each_missing_variable_with_its_kind_and_loop() -> None:
    result = next_step(FOR_EACH, ["intro"], {"xs": 3})
    assert result.blocked and result.step is None
    assert result.guidance.missing == (
        MissingContext("xs", (), "list", "lap", "it is a number, it must be a list"),
    )
    assert next_json(result)["guidance"]["missingKinds"] == {"xs": "list"}
    waiting = next_step(FOR_EACH, ["intro"], {"xs": ["a"]})
    assert waiting.guidance.missing == (MissingContext("ready", (True,)),)
    assert "missingKinds" not in next_json(waiting)["guidance"]


def test_a_complete_result_has_no_step_and_says_so() -> None:
    result = next_step(FOR_EACH, ["intro"], {"xs": []})
    assert result.is_complete and result.step is None and not result.blocked
    assert result.completed_steps == ("intro", "lap")
    assert list(next_json(result)) == ["completedSteps", "state", "step", "isComplete", "guidance"]


def test_a_verdict_holds_the_issues_and_suggestions_as_tuples() -> None:
    workflow = build(
        [step("check", validationCriteria=[{"type": "contains", "value": "Done", "message": "Say Done"}])]
    )
    assert validate_output(workflow, "check", "Done.") == Verdict(True, (), ())
    failed = validate_output(workflow, "check", "nope")
    assert failed.valid is False
    assert failed.suggestions == ("Include the exact text 'Done' (case matters).",)
    assert verdict_json(failed) == {
        "valid": False,
        "issues": list(failed.issues),
        "suggestions": list(failed.suggestions),
    }


@pytest.mark.parametrize(
    "kind", [NextResult, StepView, Guidance, MissingContext, LoopPosition, LoopView, Verdict]
)
def test_every_result_type_is_frozen_and_slotted(kind: type) -> None:
    assert dataclasses.is_dataclass(kind)
    assert kind.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert "__slots__" in vars(kind) and "__dict__" not in vars(kind)


def test_a_result_cannot_be_changed_by_its_reader() -> None:
    result = next_step(FOR_EACH, [], {})
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.is_complete = True  # type: ignore[misc]


@pytest.mark.slow
def test_the_engine_loads_no_service_runs_protocol_or_wire_module() -> None:
    code = (
        "import sys, handrail.engine\n"
        "bad = [m for m in sys.modules if m == 'handrail.engine.result_json' or m.split('.')[1:2] and "
        "m.split('.')[1] in ('service', 'runs', 'protocol', 'transport', 'catalog')]\n"
        "print(bad)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_step_that_cannot_depend_on_the_context_is_answered_the_same_each_time() -> None:
    steps = [step("one", guidance=["Be brief."]), step("two", prompt="Hi {{name}}.")]
    workflow = build(steps)
    first = next_step(workflow, ["one"], {"name": "Ana"})
    assert first.step is not None and first.step.prompt == "Hi Ana."  # a template: made per call
    assert next_step(workflow, ["one"], {"name": "Bo"}).step.prompt == "Hi Bo."  # type: ignore[union-attr]
    made_once = next_step(workflow, [], {})
    again = next_step(workflow, [], {"unrelated": 1})
    assert again.step is made_once.step and again.guidance is made_once.guidance
    assert next_step(build(steps), [], {}) == made_once  # what is kept is what a fresh workflow gives
    # each answer's JSON is its own: changing one changes no later answer
    answer = next_json(again)
    answer["step"]["title"] = "changed"
    answer["guidance"]["prompt"] = "changed"
    assert next_json(again) == next_json(made_once) and next_json(again)["step"]["title"] == "One"
