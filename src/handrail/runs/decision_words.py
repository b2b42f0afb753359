"""What a person's decision says to the agent: the decision's own fields, a decline's
issue and suggestion, an approval's message, and the refusal of a loop's step that is
current again with only the time before's approval."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from handrail.model.errors import InvalidParams
from handrail.model.runs import RunRecord, RunStatus
from handrail.runs.position import Position


def decision_data(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: data[k] for k in ("person", "comment") if k in data}


def declined_issue(data: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    issue = f"{data.get('person', 'a person')} declined this step"
    comment = data.get("comment")
    if comment:
        issue += f": {comment}"
    return [issue], ["Change the output as the comment asks, then submit the step again."]


def next_time_round(run: RunRecord, step_id: str, data: Mapping[str, Any]) -> InvalidParams:
    """A call without output on a loop's step that is current again: the approval in the
    log was for the time before, and this time has none."""
    person = data.get("person", "a person")
    return InvalidParams(
        data={
            "runId": run.id,
            "stepId": step_id,
            "earlierApproval": decision_data(data),
            "details": f"output is required with stepId: `{step_id}` is the current step again, the "
            f"next time round its loop. {person} approved it the time before; this time has no "
            "output and no decision yet, so send this time's output",
        }
    )


def approved_message(run: RunRecord, step_id: str, data: Mapping[str, Any]) -> str:
    said = f"{data.get('person', 'A person')} approved step `{step_id}` and it was accepted"
    if run.status == RunStatus.COMPLETED:
        return said + "; the run is completed, nothing is left to do."
    current = Position.stored(run.position).step_id
    if current is None:
        return said + "; the run waits for context (see guidance)."
    return said + f"; the run goes on with step `{current}`."
