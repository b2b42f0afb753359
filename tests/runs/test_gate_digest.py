"""The gate digest the run layer keeps in the run row: the current step's rules as the
pinned workflow gives them, written at the start and at every move of the step, so a
hook decides from the row alone."""

from __future__ import annotations

import itertools
import json

import pytest

from handrail.rules.policy import policy_of_source
from handrail.runs import gate_digest
from tests.gate.runs import FIXTURE, STEPS, GateWorld

DOCUMENT = json.loads(FIXTURE.read_text())


def digest_and_step(world: GateWorld) -> tuple[object, object]:
    """The step the row's digest names, and the step its position names."""
    run = world.runs.ledger.store.get(world.run_id or "")
    assert run is not None and run.gate is not None and not run.tampered
    step = run.position.get("step")
    return json.loads(run.gate)["step"], step.get("id") if isinstance(step, dict) else None


@pytest.mark.parametrize("step", STEPS)
def test_a_step_s_digest_compiles_to_the_policy_its_pinned_source_gives(step: str) -> None:
    read = gate_digest.read(gate_digest.compiled(DOCUMENT, {"step": {"id": step}}, ["/flows"]))
    assert read is not None and read.step_id == step and read.folders == ("/flows",)
    assert (read.number, read.steps) == (STEPS.index(step) + 1, len(STEPS))
    mine, theirs = gate_digest.policy(read), policy_of_source(DOCUMENT, step)
    assert (mine is None) == (theirs is None)
    if mine is not None and theirs is not None:
        assert [r.text for r in mine.deny] == [r.text for r in theirs.deny]
        assert (mine.allow is None) == (theirs.allow is None)
        assert [r.text for r in mine.allow or ()] == [r.text for r in theirs.allow or ()]


def test_the_row_s_digest_follows_the_run_from_its_start_through_each_step(world: GateWorld) -> None:
    world.start("plan")
    assert digest_and_step(world) == ("plan", "plan")
    for done, now in itertools.pairwise(STEPS):
        world.complete(done)
        assert digest_and_step(world) == (now, now)


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "not json",
        "[]",
        '{"form": 2, "step": "x", "steps": 1, "rules": null, "folders": []}',
        '{"form": 1, "step": 3, "steps": 1, "rules": null, "folders": []}',
    ],
)
def test_a_digest_this_handrail_does_not_write_is_not_read(text: str | None) -> None:
    assert gate_digest.read(text) is None
