"""What a run's events notify: the plain JSON payload of each (spec/notify.md), for
every target. Pure: the ledger calls it with the run as its write leaves it and queues
the result in the same transaction."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from handrail.model.runs import Event, EventType, NewEvent, RunRecord
from handrail.notify.targets import NotifyConfig
from handrail.store.base import NewNotification

# the run events that notify, and the payload's `type`
NOTIFYING: dict[str, str] = {
    EventType.AWAITING_APPROVAL: "run.awaiting_approval",
    EventType.APPROVAL_GIVEN: "run.approval_given",
    EventType.REMINDED: "run.approval_reminder",
    EventType.ESCALATED: "run.approval_escalated",
    EventType.APPROVED: "run.approved",
    EventType.DECLINED: "run.declined",
    EventType.COMPLETED: "run.completed",
    EventType.ABANDONED: "run.abandoned",
}
CHECK_FAILING = "run.check_failing"
# a one-time link for a decision the command line could not take (runs/links.py): sent at
# once to the run's own receivers, never queued in the store, which the agent can read
APPROVAL_LINK = "run.approval_link"
STUCK = "run.stuck"
TEST = "test"


def payload(
    kind: str,
    run: RunRecord,
    *,
    at: str,
    person: str,
    step: Mapping[str, Any] | None,
    link: str | None,
    details: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "type": kind,
        "occurredAt": at,
        "run": {
            "id": run.id,
            "status": str(run.status),
            "workflowId": run.workflow_id,
            "workflowVersion": run.workflow_version,
            "goal": run.goal,
            "owner": run.owner,
            "workspace": run.workspace,
        },
        "step": dict(step) if step else None,
        "person": person,
        "link": link,
        "details": dict(details or {}),
    }


def _check_key(step_id: str | None, data: Mapping[str, Any]) -> tuple[Any, ...]:
    return (step_id, data.get("check"), data.get("pointer"), data.get("description"))


def _failing(new: Sequence[NewEvent], history: Callable[[], Sequence[Event]], times: int) -> list[NewEvent]:
    """The failed checks of `new` that, with it, have failed `times` times in a row
    (exactly: a longer streak is not reported again)."""
    failed = [e for e in new if e.type == EventType.CHECK and e.data.get("passed") is False]
    if not failed:
        return []
    past = [(e.step_id, e.data) for e in history() if e.type == EventType.CHECK]
    found = []
    for event in failed:
        key = _check_key(event.step_id, event.data)
        streak = 1
        for step_id, data in reversed(past):
            if _check_key(step_id, data) != key:
                continue
            if data.get("passed") is not False:
                break
            streak += 1
        if streak == times:
            found.append(event)
    return found


def _step(run: RunRecord, event: NewEvent, batch: Sequence[NewEvent]) -> dict[str, Any] | None:
    if event.step_id is None:  # abandoned: the step it stopped at; completed: none
        return run.current_step
    titles = [e.data.get("title") for e in (event, *batch) if e.step_id == event.step_id]
    title = next((t for t in titles if isinstance(t, str)), None)
    current = run.position.get("step")
    if not isinstance(title, str) and isinstance(current, dict) and current.get("id") == event.step_id:
        title = current.get("title")
    return {"id": event.step_id, "title": title if isinstance(title, str) else event.step_id}


def notices(
    config: NotifyConfig,
    run: RunRecord,
    events: Sequence[NewEvent],
    actor: str,
    history: Callable[[], Sequence[Event]],
    *,
    dashboard_url: str | None,
) -> list[NewNotification]:
    """The notifications `events`, just written to `run` by `actor`, cause: one per target
    and notifying event. `history`: the run's log before them, read only when a check failed."""
    if not config.targets:
        return []
    link = config.link(run.id, dashboard_url)
    made: list[tuple[str, dict[str, Any]]] = []

    def note(kind: str, event: NewEvent, person: str, details: dict[str, Any]) -> None:
        step = _step(run, event, events)
        made.append(
            (
                kind,
                payload(kind, run, at=run.updated_at, person=person, step=step, link=link, details=details),
            )
        )

    for event in _failing(events, history, config.failures_in_a_row):
        details = {
            "failures": config.failures_in_a_row,
            "check": {k: event.data[k] for k in ("check", "message", "why", "pointer") if k in event.data},
        }
        note(CHECK_FAILING, event, actor, details)
    for event in events:
        kind = NOTIFYING.get(event.type)
        if kind is None:
            continue
        details = {
            k: event.data[k]
            for k in ("comment", "via", "reason", "role", "approvers", "by", "session")
            if k in event.data
        }
        note(kind, event, str(event.data.get("person", actor)), details)
    return [NewNotification(target.spec, kind, body) for kind, body in made for target in config.targets]


def stuck(
    config: NotifyConfig, run: RunRecord, at: str, *, dashboard_url: str | None
) -> list[NewNotification]:
    """The notifications of a run idle since its last write."""
    body = payload(
        STUCK,
        run,
        at=at,
        person=run.owner,
        step=run.current_step,
        link=config.link(run.id, dashboard_url),
        details={"idleSince": run.updated_at, "stuckAfterSeconds": config.stuck_after},
    )
    return [NewNotification(target.spec, STUCK, body) for target in config.targets]


def approval_link(
    run: RunRecord, *, at: str, person: str, link: str, decision: str, expires: str
) -> dict[str, Any]:
    """The notification that carries a one-time approval link to the person."""
    details = {"decision": decision, "expires": expires, "once": True}
    return payload(
        APPROVAL_LINK, run, at=at, person=person, step=run.current_step, link=link, details=details
    )
