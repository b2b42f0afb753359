"""The run state machine's one table: the spec shows it as the code has it, and it
decides and refuses as the run operations need."""

from __future__ import annotations

from pathlib import Path

from handrail.model.runs import EventType, RunStatus
from handrail.runs import machine

SPEC = Path(__file__).resolve().parents[2] / "spec" / "runs.md"


def test_the_specs_transition_table_is_the_one_the_code_uses() -> None:
    found = machine.spec_section(SPEC.read_text(encoding="utf-8"))
    assert found is not None, f"{SPEC} lacks the generated transitions section"
    assert found == machine.section(), (
        "spec/runs.md's transition table differs from handrail.runs.machine.TRANSITIONS: "
        "run `python -m handrail.runs.machine spec/runs.md` to regenerate it"
    )


def test_an_acceptance_that_leaves_no_step_completes_the_run() -> None:
    events = [EventType.CHECK, EventType.ACCEPTED, EventType.COMPLETED]
    assert machine.after(RunStatus.ACTIVE, events) is RunStatus.COMPLETED


def test_an_approval_then_acceptance_leaves_the_run_active() -> None:
    events = [EventType.APPROVED, EventType.ACCEPTED]
    assert machine.after(RunStatus.AWAITING_APPROVAL, events) is RunStatus.ACTIVE


def test_a_finished_run_accepts_no_event_but_the_usage_of_the_agent_that_finished_it() -> None:
    assert machine.offers(RunStatus.ABANDONED) == frozenset()
    # `handrail drive`'s agent ends after the step it submitted completed the run
    assert machine.offers(RunStatus.COMPLETED) == {EventType.USAGE}
    assert machine.after(RunStatus.COMPLETED, [EventType.USAGE]) is RunStatus.COMPLETED
    for status in (RunStatus.COMPLETED, RunStatus.ABANDONED):
        assert machine.after(status, [EventType.ABANDONED]) is None


def test_only_a_run_awaiting_approval_offers_a_persons_decision() -> None:
    deciding = {s for s in RunStatus if EventType.APPROVED in machine.offers(s)}
    assert deciding == {RunStatus.AWAITING_APPROVAL}


def test_stored_values_are_the_plain_strings_of_the_wire() -> None:
    assert [str(s) for s in RunStatus] == ["active", "awaiting_approval", "completed", "abandoned"]
    assert RunStatus.ACTIVE == "active" and f"{EventType.APPROVAL_ASKED}" == "approval_asked"
