"""workflow_continue with an output, a context or both, on every kind of step a run can
be at (spec/runs.md): the stepId is checked against the step current before the
context merges, then the context merges, then the output is judged; a refused call
leaves the run's context as it was."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handrail.catalog import load_catalog
from handrail.model.errors import HandrailError
from handrail.runs.position import merge_context
from handrail.service.core import Service, later_runs
from tests.runs.workflows import write

RULE = [{"type": "contains", "value": "Done", "message": "Say it is done"}]
TARGET: dict[str, Any] = {"id": "target", "title": "Target", "prompt": "Do it.", "validationCriteria": RULE}
NEXT = {"id": "next", "title": "Next", "prompt": "Go on."}


def _flow(name: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": name, "name": name, "description": "A step kind.", "version": "1.0.0", "steps": steps}


# each kind of step, as (the workflow, the context its run starts with)
KINDS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "plain": (_flow("plain", [TARGET, NEXT]), {}),
    # clarify's shape: the step's own variable, which a call may set to what turns it off
    "conditioned": (
        _flow("conditioned", [{**TARGET, "runCondition": {"var": "open", "gt": 0}}, NEXT]),
        {"open": 1},
    ),
    "approval": (_flow("approval", [{**TARGET, "requireConfirmation": True}, NEXT]), {}),
    "loop": (
        _flow(
            "loop",
            [
                {
                    "id": "each",
                    "type": "loop",
                    "title": "Each",
                    "loop": {"type": "forEach", "items": "parts", "itemVar": "part", "maxIterations": 5},
                    "body": [TARGET],
                },
                NEXT,
            ],
        ),
        {"parts": ["a", "b"]},
    ),
    "branch": (
        _flow(
            "branch",
            [
                {
                    "id": "fan",
                    "type": "loop",
                    "title": "Fan",
                    "loop": {
                        "type": "forEach",
                        "items": "files",
                        "itemVar": "file",
                        "maxIterations": 5,
                        "parallel": True,
                    },
                    "body": [TARGET, NEXT],
                },
                {"id": "report", "title": "Report", "prompt": "Report."},
            ],
        ),
        {"files": ["a.py"]},
    ),
    "child": (
        _flow("child", [{"id": "sub", "workflow": "child-flow", "context": {}}, NEXT]),
        {},
    ),
}
CHILD_FLOW = _flow("child-flow", [TARGET, NEXT])

CALLS = ("output", "context", "both", "another-step", "refused-output")
CHANGES = st.dictionaries(
    st.sampled_from(["open", "note", "extra"]),
    st.one_of(st.none(), st.integers(0, 3), st.text("abc", max_size=3)),
    min_size=1,
    max_size=3,
)


@pytest.fixture(scope="module")
def service() -> Iterator[Service]:
    with tempfile.TemporaryDirectory() as folder:
        flows = Path(folder) / "flows"
        for document, _ in KINDS.values():
            write(flows, document)
        write(flows, CHILD_FLOW)
        served = Service(load_catalog(flows, bundled=False), runs=later_runs(f"sqlite:///{folder}/runs.db"))
        try:
            yield served
        finally:
            served.close()


def at_target(service: Service, kind: str) -> str:
    """A new run of `kind`'s workflow; the run (itself, its branch or its child) at `target`."""
    document, context = KINDS[kind]
    started = service.call(
        "workflow_start",
        {
            "workflowId": document["id"],
            "goal": f"A {kind} step",
            "workspace": tempfile.gettempdir(),
            "context": context,
        },
    )
    if kind == "branch":
        return str(started["branches"][0]["runId"])
    if kind == "child":
        return str(started["children"][0]["runId"])
    assert started["step"]["id"] == "target", started
    return str(started["runId"])


def stored(service: Service, run_id: str) -> tuple[Mapping[str, Any], str | None]:
    found = service.call("workflow_resume", {"runId": run_id})
    step = found.get("step")
    return found["context"], step["id"] if step else None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(sorted(KINDS)), st.sampled_from(CALLS), CHANGES)
def test_an_output_a_context_or_both_on_any_step_do_what_the_spec_says(
    service: Service, kind: str, call: str, changes: dict[str, Any]
) -> None:
    run_id = at_target(service, kind)
    before, step = stored(service, run_id)
    assert step == "target"
    params: dict[str, Any] = {"runId": run_id}
    if call != "context":
        params["stepId"] = "next" if call == "another-step" else "target"
        params["output"] = "Not yet." if call == "refused-output" else "Done, as asked."
    if call != "output":
        params["context"] = changes
    merged = merge_context(before, changes) if call in ("context", "both") else dict(before)

    if call == "another-step":
        with pytest.raises(HandrailError) as refused:
            service.call("workflow_continue", params)
        assert refused.value.code == -32009
        assert refused.value.data["currentStep"] == "target"
        assert stored(service, run_id) == (before, "target")
        return
    answer = service.call("workflow_continue", params)
    after, now = stored(service, run_id)
    assert after == merged
    if call == "refused-output":
        assert answer["accepted"] is False and answer["issues"] == ["Say it is done"]
        assert now == "target"
    elif call == "context":
        assert answer["accepted"] is False and "issues" not in answer
    elif kind == "approval":  # waits on a person, at the step it was submitted for
        assert answer["status"] == "awaiting_approval" and now == "target"
    else:
        assert answer["accepted"] is True, answer
        assert now != "target" or kind == "loop"  # a loop's next iteration is the same step
        if kind == "loop":
            assert answer["loop"]["iteration"] == 2
