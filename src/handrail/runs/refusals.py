"""The errors a run operation refuses with, worded for the agent that called it."""

from __future__ import annotations

from handrail.model.errors import InvalidParams, RunNotActive, SecurityError, StepNotCurrent
from handrail.model.runs import RunRecord, RunStatus
from handrail.runs.position import Position


def not_active(run: RunRecord) -> RunNotActive:
    if run.status == RunStatus.COMPLETED:
        details = (
            "the run is completed: every step was accepted and its record is kept "
            "(workflow_resume shows it), so nothing is lost and nothing is left to do in it; "
            "for new work, start a new run with workflow_start"
        )
    else:
        details = f"the run is {run.status}; start a new run with workflow_start"
    return RunNotActive(data={"runId": run.id, "status": run.status.value, "details": details})


def not_current(
    step_id: str, run: RunRecord, *, position: Position | None = None, moved: bool = False
) -> StepNotCurrent:
    position = Position.stored(run.position) if position is None else position
    current = position.step.get("id") if position.step is not None else None
    if moved:
        details = f"another submission for `{step_id}` was accepted first; the run is now at " + (
            f"`{current}`" if current else ("its end" if position.is_complete else "no step (blocked)")
        )
    elif current is None:
        details = (
            "the run is complete"
            if position.is_complete
            else "the run has no current step: set the context it is waiting for (see missingContext) "
            "with workflow_continue, this runId and only `context`"
        )
    else:
        details = f"the run is at `{current}`, not `{step_id}`"
    return StepNotCurrent(
        data={"runId": run.id, "stepId": step_id, "currentStep": current, "details": details}
    )


class AnswerRefused(InvalidParams):
    """A client's approval answer that answers no open question: nothing is decided."""

    def fix(self) -> str:
        return ""


def answer_refused(run: RunRecord, reason: str) -> AnswerRefused:
    step_id = Position.stored(run.position).step_id
    if run.status == RunStatus.AWAITING_APPROVAL:
        after = (
            f"Nothing was approved or declined: the run still waits for a person to approve step "
            f"`{step_id}`. Call workflow_continue with this runId and no inputResponses to have the "
            f"person asked, or ask the user to run `handrail runs approve {run.id}`"
        )
    else:
        after = f"Nothing was changed: the run is {run.status}"
    return AnswerRefused(
        data={
            "runId": run.id,
            "status": run.status.value,
            "details": f"the client's approval answer was not used: {reason}. {after}",
        }
    )


class NotAllowedToDecide(SecurityError):
    """A person, token or channel the step's approval rule or the server's
    `--approval-channels` does not let decide: nothing is decided. `data.rule` names
    the rule (`approvers`, `approvals`, `separateApprover`, `--approval-channels`,
    `scope`)."""

    title = "Not allowed to decide this approval"


def not_allowed(run: RunRecord, reason: str) -> NotAllowedToDecide:
    rule = reason.split(":", 1)[0]
    return NotAllowedToDecide(
        f"Not allowed to decide this approval: {reason}",
        data={"runId": run.id, "rule": rule, "details": reason},
    )
