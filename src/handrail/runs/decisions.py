"""A person's decisions on a step that waits for approval (spec/runs.md, "Approvals"):
asked through the client when it can ask, else by `handrail runs approve|decline`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from handrail.errors import InvalidParams, RunNotActive, StateError
from handrail.runs.base import MAX_RETRIES, RunsBase, _not_current, _off_the_clock, shown_title
from handrail.store.base import Conflict, NewEvent, RunRecord, RunUpdate


class Decisions(RunsBase):
    """Approve, decline, and what a run waiting for a person answers meanwhile."""

    def _ask(self, run: RunRecord, step: Mapping[str, Any], output: str) -> dict[str, Any]:
        """Ask the person through the client when it can be asked; else say who must act."""
        from handrail.runs.approvals import REQUEST_APPROVER, Question

        approver = REQUEST_APPROVER.get()
        if approver is not None:
            question = Question(
                run.id, str(step["id"]), str(step.get("title", step["id"])), output, run.workflow_id
            )
            with _off_the_clock():  # a person takes their time
                decision = approver.ask(question)
            if decision is not None:
                return self._decide(
                    run.id, decision.approve, person=decision.person, comment=decision.comment, via="client"
                )
        return self._waiting_answer(run)

    def _pending(self, run: RunRecord) -> tuple[str, str]:
        """(step, output) the run waits on a person for: its last `awaiting_approval` event."""
        for event in reversed(self.store.events(run.id)):
            if event.type == "awaiting_approval" and event.step_id is not None:
                return event.step_id, str(event.data.get("output", ""))
        raise StateError("the run waits for approval but has no step awaiting it", {"runId": run.id})

    def pending_approval(self, run: RunRecord) -> dict[str, Any] | None:
        """What a person is asked to approve: the submitted output, the results of the checks
        run on it and what the step asks for (its rules and checks in words); None when the
        run waits for nobody."""
        if run.status != "awaiting_approval":
            return None
        events = self.store.events(run.id)
        at = next(
            (i for i in range(len(events) - 1, -1, -1) if events[i].type == "awaiting_approval"), None
        )
        if at is None or events[at].step_id is None:
            return None
        step_id = events[at].step_id
        checks: list[dict[str, Any]] = []
        for event in reversed(events[:at]):  # the checks written with it, just before it
            if event.type != "check" or event.step_id != step_id:
                break
            checks.insert(0, dict(event.data))
        step = run.position.get("step")
        step = step if isinstance(step, Mapping) else {}
        guidance = run.position.get("guidance")
        rules = guidance.get("validationCriteria", []) if isinstance(guidance, Mapping) else []
        return {
            "stepId": step_id,
            "title": str(events[at].data.get("title") or step.get("title") or step_id),
            "output": str(events[at].data.get("output", "")),
            "checks": checks,
            "criteria": [str(r) for r in rules],
            "checksAsked": [str(c) for c in step.get("checks", [])],
            "at": events[at].at,
        }

    def _awaiting(
        self, run: RunRecord, step_id: str | None, changes: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        pending, output = self._pending(run)
        if step_id is not None and step_id != pending:
            raise _not_current(step_id, run)
        if changes:
            raise InvalidParams(
                data={
                    "details": "the run is waiting for a person to approve its step; its context "
                    "cannot change until they decide"
                }
            )
        step = run.position.get("step")
        if isinstance(step, Mapping):
            return self._ask(run, step, output)
        return self._waiting_answer(run)

    def _waiting_answer(self, run: RunRecord) -> dict[str, Any]:
        step = run.position.get("step")
        step_id = step.get("id") if isinstance(step, Mapping) else None
        approve = f"handrail runs approve {run.id}"
        decline = f"handrail runs decline {run.id}"
        return {
            "runId": run.id,
            "accepted": False,
            "status": "awaiting_approval",
            "approval": {
                "stepId": step_id,
                "approve": approve + " [--comment TEXT]",
                "decline": decline + " [--comment TEXT]",
                "message": f"The output passed its rules and checks, but step `{step_id}` needs a "
                f"person's approval. Ask the user to run `{approve}` (or `{decline} --comment "
                "...` to send it back). Wait until they have, then call workflow_continue with this "
                "runId and stepId (the output may be left out) to go on.",
            },
            **self._view(run),
        }

    def _after_decision(self, run: RunRecord, step_id: str) -> dict[str, Any]:
        """workflow_continue {runId, stepId} once a person decided on that step."""
        previous = ""  # the type of the event after this one (the log read backwards)
        for event in reversed(self.store.events(run.id)):
            if event.step_id == step_id and event.type == "accepted":
                previous = "accepted"
                continue  # an approval is written just before the acceptance it gives
            if event.step_id == step_id and event.type in ("approved", "declined"):
                if previous == "accepted" and event.type == "declined":
                    break
                if event.type == "approved":
                    return {
                        "runId": run.id,
                        "accepted": True,
                        "status": run.status,
                        "approved": _decision_data(event.data),
                        **self._view(run),
                    }
                issues, suggestions = _declined_issue(event.data)
                return {
                    "runId": run.id,
                    "accepted": False,
                    "status": run.status,
                    "issues": issues,
                    "suggestions": suggestions,
                    **self._view(run),
                }
            if previous == "accepted" or (event.step_id == step_id and event.type == "rejected"):
                break  # the step was last accepted without a person, or sent again since
        raise InvalidParams(data={"details": "output is required with stepId"})

    def approve(
        self, run_id: str, *, person: str, comment: str | None = None, via: str = "cli"
    ) -> dict[str, Any]:
        """A person approves the step the run waits on: it is accepted and the run goes on.
        `via`: where the person decided (`cli`, `dashboard`), recorded on the event."""
        return self._decide(run_id, True, person=person, comment=comment, via=via)

    def decline(
        self, run_id: str, *, person: str, comment: str | None = None, via: str = "cli"
    ) -> dict[str, Any]:
        """A person declines it: the run stays on the step, and the comment is an issue."""
        return self._decide(run_id, False, person=person, comment=comment, via=via)

    def _decide(
        self, run_id: str, approve: bool, *, person: str, comment: str | None, via: str
    ) -> dict[str, Any]:
        from handrail.engine import next_step
        from handrail.result_json import next_json

        for _ in range(MAX_RETRIES):
            run = self.run(run_id)
            if run.status != "awaiting_approval":
                details = f"the run is {run.status}, not waiting for a person's approval"
                raise RunNotActive(data={"runId": run.id, "status": run.status, "details": details})
            step_id, output = self._pending(run)
            decided = {"person": person, "via": via, **({"comment": comment} if comment else {})}
            try:
                if not approve:
                    written = self._write(
                        run, RunUpdate(status="active"), [NewEvent("declined", step_id, decided)], person
                    )
                    issues, suggestions = _declined_issue(decided)
                    return {
                        "runId": run.id,
                        "accepted": False,
                        "status": written.status,
                        "declined": _decision_data(decided),
                        "issues": issues,
                        "suggestions": suggestions,
                        **self._view(written),
                    }
                workflow = self.pins.workflow(run.source_hash, None, self.store)
                position = run.position
                result = next_step(
                    workflow, [*position["completedSteps"], step_id], run.context, state=position.get("state")
                )
                after = next_json(result)
                status = "completed" if result.is_complete else "active"
                events = [
                    NewEvent("approved", step_id, decided),
                    NewEvent("accepted", step_id, {"output": output, **shown_title(run.position)}),
                ]
                if status == "completed":
                    events.append(NewEvent("completed"))
                written = self._write(
                    run, RunUpdate(status=status, position=after, accepted=run.accepted + 1), events, person
                )
            except Conflict:
                continue
            return {
                "runId": run.id,
                "accepted": True,
                "status": written.status,
                "approved": _decision_data(decided),
                **self._view(written),
            }
        raise StateError("the run is changing too fast to write; try again", {"runId": run_id})


def _decision_data(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: data[k] for k in ("person", "comment") if k in data}


def _declined_issue(data: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    issue = f"{data.get('person', 'a person')} declined this step"
    comment = data.get("comment")
    if comment:
        issue += f": {comment}"
    return [issue], ["Change the output as the comment asks, then submit the step again."]
