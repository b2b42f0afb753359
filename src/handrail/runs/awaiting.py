"""A run awaiting a person's approval (spec/runs.md, "Approvals"): the approval it
waits on and its rule, what it shows a person, and what a call gets meanwhile and once
they decided. Recording their decision is runs/decisions.py; asking them through the
client, runs/questions.py."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from handrail.model.errors import HandrailError, InvalidParams, StateError
from handrail.model.runs import Event, EventType, RunRecord, RunStatus
from handrail.model.workflow import ApprovalRule, Step
from handrail.notify.targets import shown
from handrail.runs.approvers import Pending, pending
from handrail.runs.decision_words import approved_message, decision_data, declined_issue, next_time_round
from handrail.runs.ledger import Ledger
from handrail.runs.position import Position
from handrail.runs.shapes import view


class Awaiting:
    """What a run waiting for a person shows, and answers meanwhile."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def approval(self, run: RunRecord, events: list[Event] | None = None) -> Pending | None:
        """The approval the run waits on, with its rule; None when it waits for none."""
        if run.status != RunStatus.AWAITING_APPROVAL:
            return None
        events = self.ledger.events(run.id) if events is None else events
        return pending(events, lambda step_id: self._rule(run, step_id), run.owner, datetime.now(UTC))

    def _rule(self, run: RunRecord, step_id: str) -> ApprovalRule | None:
        try:
            workflow = self.ledger.pinned(None, run)
        except HandrailError:  # its source is gone: no rule beyond the default
            return None
        node = workflow.nodes.get(step_id)
        return node.approval if isinstance(node, Step) else None

    def page(self, run_id: str) -> str | None:
        """The run's dashboard page (`--public-url`, else the address this server serves
        the dashboard at); None when the server knows no dashboard address."""
        url = self.ledger.settings.dashboard_url
        return f"{url.rstrip('/')}/runs/{run_id}" if url else None

    def settled(self, run_id: str, seq: int) -> bool:
        """Whether question `seq` of the run is done with: a person decided after it, or
        the run waits for no approval (any more)."""
        run = self.ledger.store.get(run_id)
        if run is None or run.status != RunStatus.AWAITING_APPROVAL:
            return True
        decided = (EventType.APPROVED, EventType.DECLINED)
        return any(e.seq > seq and e.type in decided for e in self.ledger.events(run_id))

    def step(self, run: RunRecord) -> tuple[str, str]:
        """(step, output) the run waits on a person for: its last `awaiting_approval` event."""
        for event in reversed(self.ledger.events(run.id)):
            if event.type == EventType.AWAITING_APPROVAL and event.step_id is not None:
                return event.step_id, str(event.data.get("output", ""))
        raise StateError("the run waits for approval but has no step awaiting it", {"runId": run.id})

    def pending_approval(self, run: RunRecord) -> dict[str, Any] | None:
        """What a person is asked to approve: the submitted output, the results of the checks
        run on it and what the step asks for (its rules and checks in words); None when the
        run waits for nobody."""
        if run.status != RunStatus.AWAITING_APPROVAL:
            return None
        events = self.ledger.events(run.id)
        at = next(
            (i for i in range(len(events) - 1, -1, -1) if events[i].type == EventType.AWAITING_APPROVAL), None
        )
        if at is None or events[at].step_id is None:
            return None
        step_id = events[at].step_id
        checks: list[dict[str, Any]] = []
        for event in reversed(events[:at]):  # the checks written with it, just before it
            if event.type != EventType.CHECK or event.step_id != step_id:
                break
            checks.insert(0, dict(event.data))
        position = Position.stored(run.position)
        step = position.step or {}
        guidance = position.guidance
        rules = guidance.get("validationCriteria", []) if guidance is not None else []
        return {
            "stepId": step_id,
            "title": str(events[at].data.get("title") or step.get("title") or step_id),
            "output": str(events[at].data.get("output", "")),
            "checks": checks,
            "criteria": [str(r) for r in rules],
            "checksAsked": [str(c) for c in step.get("checks", [])],
            "at": events[at].at,
        }

    def answer(self, run: RunRecord, client_answer: str | None = None) -> dict[str, Any]:
        """What a call gets while the run waits for a person: where they can decide (the
        dashboard page, the CLI, the notification channels), and, when the client was just
        asked, that it gave no answer (`client_answer`: `cancel` or `none`)."""
        step_id = _current_id(run)
        approve = f"handrail runs approve {run.id}"
        decline = f"handrail runs decline {run.id}"
        how = f"Ask the user to run `{approve}` (or `{decline} --comment ...` to send it back)"
        page = self.page(run.id)
        if page:
            how = (
                f"Ask the user to approve or decline it on the dashboard page {page}, or to run "
                f"`{approve}` (or `{decline} --comment ...` to send it back)"
            )
        notify = self.ledger.settings.notify
        notified = [shown(t.spec) for t in notify.targets] if notify is not None else []
        if notified:
            how += f"; the server also sent the request to {', '.join(notified)}"
        said = {
            "cancel": "Your client closed the approval question without an answer (cancel): that "
            "is not a decision, and nobody declined the step. ",
            "none": "Your client gave no answer to the approval question in time: that is not a decision. ",
        }.get(client_answer or "", "")
        return {
            "runId": run.id,
            "accepted": False,
            "status": RunStatus.AWAITING_APPROVAL.value,
            "approval": {
                "stepId": step_id,
                "approve": approve + " [--comment TEXT]",
                "decline": decline + " [--comment TEXT]",
                "message": f"{said}The output passed its rules and checks, but step `{step_id}` needs a "
                f"person's approval. {how}. Wait until they have, then call workflow_continue with "
                "this runId and stepId (the output may be left out) to go on.",
                **({"page": page} if page else {}),
                **({"notified": notified} if notified else {}),
                **({"clientAnswer": client_answer} if client_answer else {}),
            },
            **view(run),
        }

    def after_decision(self, run: RunRecord, step_id: str) -> dict[str, Any]:
        """workflow_continue {runId, stepId} once a person decided on that step."""
        previous = ""  # the type of the event after this one (the log read backwards)
        for event in reversed(self.ledger.events(run.id)):
            if event.step_id == step_id and event.type == EventType.ACCEPTED:
                previous = EventType.ACCEPTED
                continue  # an approval is written just before the acceptance it gives
            if event.step_id == step_id and event.type in (EventType.APPROVED, EventType.DECLINED):
                if previous == EventType.ACCEPTED and event.type == EventType.DECLINED:
                    break
                if event.type == EventType.APPROVED:
                    if previous == EventType.ACCEPTED and _current_id(run) == step_id:
                        raise next_time_round(run, step_id, event.data)
                    return {
                        "runId": run.id,
                        "accepted": True,
                        "status": run.status.value,
                        "approved": decision_data(event.data),
                        "message": approved_message(run, step_id, event.data),
                        **view(run),
                    }
                issues, suggestions = declined_issue(event.data)
                return {
                    "runId": run.id,
                    "accepted": False,
                    "status": run.status.value,
                    "issues": issues,
                    "suggestions": suggestions,
                    **view(run),
                }
            rejected = event.step_id == step_id and event.type == EventType.REJECTED
            if previous == EventType.ACCEPTED or rejected:
                break  # the step was last accepted without a person, or sent again since
        raise InvalidParams(data={"details": "output is required with stepId"})


def _current_id(run: RunRecord) -> str | None:
    return Position.stored(run.position).step_id
