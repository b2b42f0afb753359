"""A person's decisions on a step that waits for approval (spec/runs.md, "Approvals"):
asked through the client when it can ask, else by `handrail runs approve|decline`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from handrail.errors import InvalidParams, RunNotActive, StateError
from handrail.runs.base import MAX_RETRIES, RunsBase, _not_current, _off_the_clock, shown_title
from handrail.store.base import Conflict, NewEvent, RunRecord, RunUpdate

if TYPE_CHECKING:
    from handrail.request import Request
    from handrail.runs.approvals import Answer, InputRequired, Question


class Decisions(RunsBase):
    """Approve, decline, and what a run waiting for a person answers meanwhile."""

    def _ask(
        self, request: Request, run: RunRecord, step: Mapping[str, Any], output: str
    ) -> dict[str, Any] | InputRequired:
        """Ask the person through the client when the request says how; else say who must
        act. An answer the call already carries counts only for a question asked before."""
        from handrail.runs.approvals import Decision

        approver = request.approver
        if approver is None:
            return self._waiting_answer(run)
        given = approver.given()
        if given is not None:
            return self._answered(request, run, given)
        question = self._question(request, run, step, output)
        with _off_the_clock():  # a person takes their time
            decision = approver.ask(question)
        if decision is None:
            return self._waiting_answer(run)
        if not isinstance(decision, Decision):
            return decision  # the client asks the person, then calls again
        return self._decide(
            request,
            run.id,
            decision.approve,
            person=decision.person,
            comment=decision.comment,
            via="client",
            question=(question.asked, None),
        )

    def _question(self, request: Request, run: RunRecord, step: Mapping[str, Any], output: str) -> Question:
        """A question put to the client for the approval the run waits on, recorded as an
        `approval_asked` event that keeps the digest of its nonce."""
        from handrail.runs.approvals import ASKED, Question, new_nonce

        nonce, kept = new_nonce()
        step_id = str(step["id"])
        asked = NewEvent(ASKED, step_id, {"via": "client", "question": kept})
        written = self._write(run, RunUpdate(), [asked], self.owner(request))
        title = str(step.get("title", step_id))
        return Question(run.id, step_id, title, output, run.workflow_id, written.events, nonce)

    def _answered(self, request: Request, run: RunRecord, given: Answer) -> dict[str, Any]:
        """A 2026-07-28 retry's answer: used when its requestState names the question put
        for this run's pending approval, still unanswered; refused otherwise."""
        from handrail.runs.approvals import parse_request_state

        if given.request_state is None:
            raise _refused(run, "the call carries no requestState, so it answers no question handrail asked")
        parsed = parse_request_state(given.request_state)
        if parsed is None:
            raise _refused(run, "its requestState is not one handrail gave")
        run_id, seq, nonce = parsed
        if run_id != run.id:
            raise _refused(run, "its requestState is for another run")
        decision = given.decision
        return self._decide(
            request,
            run.id,
            decision.approve,
            person=decision.person,
            comment=decision.comment,
            via="client",
            question=(seq, nonce),
        )

    def _open_question(self, run: RunRecord, seq: int, nonce: str | None) -> None:
        """Refuse an answer unless question `seq` (with `nonce`, when the client carried one
        back) is the run's latest word on the approval it waits for."""
        from handrail.runs.approvals import ASKED, same_digest

        if run.status != "awaiting_approval":
            raise _refused(run, f"the run is {run.status}: it waits for no approval, so no question is open")
        events = self.store.events(run.id)
        asked = next((e for e in events if e.seq == seq), None)
        if asked is None or asked.type != ASKED:
            raise _refused(run, "handrail asked no such question")
        if nonce is not None and not same_digest(nonce, asked.data.get("question")):
            raise _refused(run, "its requestState does not match the question handrail asked")
        later = [e.type for e in events if e.seq > seq]
        if "approved" in later or "declined" in later:
            raise _refused(run, "that question was answered already, and an answer counts once")
        if "awaiting_approval" in later:
            raise _refused(run, "that question was for an earlier approval; this one has not been asked yet")
        if ASKED in later:
            raise _refused(run, "a later question replaced it; only the latest one can be answered")

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
        at = next((i for i in range(len(events) - 1, -1, -1) if events[i].type == "awaiting_approval"), None)
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
        self, request: Request, run: RunRecord, step_id: str | None, changes: Mapping[str, Any] | None
    ) -> dict[str, Any] | InputRequired:
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
            return self._ask(request, run, step, output)
        return self._waiting_answer(run)

    def _waiting_answer(self, run: RunRecord) -> dict[str, Any]:
        step = run.position.get("step")
        step_id = step.get("id") if isinstance(step, Mapping) else None
        approve = f"handrail runs approve {run.id}"
        decline = f"handrail runs decline {run.id}"
        how = f"Ask the user to run `{approve}` (or `{decline} --comment ...` to send it back)"
        page = self.dashboard_url and f"{self.dashboard_url.rstrip('/')}/runs/{run.id}"
        if page:
            how = (
                f"Ask the user to approve or decline it on the dashboard page {page}, or to run "
                f"`{approve}` (or `{decline} --comment ...` to send it back)"
            )
        return {
            "runId": run.id,
            "accepted": False,
            "status": "awaiting_approval",
            "approval": {
                "stepId": step_id,
                "approve": approve + " [--comment TEXT]",
                "decline": decline + " [--comment TEXT]",
                "message": f"The output passed its rules and checks, but step `{step_id}` needs a "
                f"person's approval. {how}. Wait until they have, then call workflow_continue with "
                "this runId and stepId (the output may be left out) to go on.",
                **({"page": page} if page else {}),
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
                    if previous == "accepted" and _current_id(run) == step_id:
                        raise _next_time_round(run, step_id, event.data)
                    return {
                        "runId": run.id,
                        "accepted": True,
                        "status": run.status,
                        "approved": _decision_data(event.data),
                        "message": _approved_message(run, step_id, event.data),
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
        self, request: Request, run_id: str, *, person: str, comment: str | None = None, via: str = "cli"
    ) -> dict[str, Any]:
        """A person approves the step the run waits on: it is accepted and the run goes on.
        `request`: whose run it is; `via`: where the person decided (`cli`, `dashboard`),
        recorded on the event."""
        return self._decide(request, run_id, True, person=person, comment=comment, via=via)

    def decline(
        self, request: Request, run_id: str, *, person: str, comment: str | None = None, via: str = "cli"
    ) -> dict[str, Any]:
        """A person declines it: the run stays on the step, and the comment is an issue."""
        return self._decide(request, run_id, False, person=person, comment=comment, via=via)

    def _decide(
        self,
        request: Request,
        run_id: str,
        approve: bool,
        *,
        person: str,
        comment: str | None,
        via: str,
        question: tuple[int, str | None] | None = None,
    ) -> dict[str, Any]:
        """`question`: (seq, nonce) of the question a client's answer is for; the answer
        is used only while that question is open (checked on the run as it is written)."""
        from handrail.engine import next_step
        from handrail.result_json import next_json

        for _ in range(MAX_RETRIES):
            run = self.run(request, run_id)
            if question is not None:
                self._open_question(run, *question)
            if run.status != "awaiting_approval":
                details = f"the run is {run.status}, not waiting for a person's approval"
                raise RunNotActive(data={"runId": run.id, "status": run.status, "details": details})
            step_id, output = self._pending(run)
            decided: dict[str, Any] = {"person": person, "via": via}
            if comment:
                decided["comment"] = comment
            if question is not None:
                decided["question"] = question[0]
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
                "message": _approved_message(written, step_id, decided),
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


class AnswerRefused(InvalidParams):
    """A client's approval answer that answers no open question: nothing is decided."""

    def fix(self) -> str:
        return ""


def _refused(run: RunRecord, reason: str) -> AnswerRefused:
    step = run.position.get("step")
    step_id = step.get("id") if isinstance(step, Mapping) else None
    if run.status == "awaiting_approval":
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
            "status": run.status,
            "details": f"the client's approval answer was not used: {reason}. {after}",
        }
    )


def _current_id(run: RunRecord) -> str | None:
    step = run.position.get("step")
    return str(step["id"]) if isinstance(step, Mapping) and "id" in step else None


def _next_time_round(run: RunRecord, step_id: str, data: Mapping[str, Any]) -> InvalidParams:
    """A call without output on a loop's step that is current again: the approval in the
    log was for the time before, and this time has none."""
    person = data.get("person", "a person")
    return InvalidParams(
        data={
            "runId": run.id,
            "stepId": step_id,
            "earlierApproval": _decision_data(data),
            "details": f"output is required with stepId: `{step_id}` is the current step again, the "
            f"next time round its loop. {person} approved it the time before; this time has no "
            "output and no decision yet, so send this time's output",
        }
    )


def _approved_message(run: RunRecord, step_id: str, data: Mapping[str, Any]) -> str:
    said = f"{data.get('person', 'A person')} approved step `{step_id}` and it was accepted"
    if run.status == "completed":
        return said + "; the run is completed, nothing is left to do."
    current = _current_id(run)
    if current is None:
        return said + "; the run waits for context (see guidance)."
    return said + f"; the run goes on with step `{current}`."
