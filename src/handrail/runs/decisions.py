"""A person's decisions on a step that waits for approval (spec/runs.md, "Approvals"):
asked through the client when it can ask, else by `handrail runs approve|decline`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from handrail.errors import InvalidParams, RunNotActive, StateError
from handrail.runs import machine
from handrail.runs.ledger import Ledger, off_the_clock
from handrail.runs.position import Position
from handrail.runs.refusals import answer_refused, not_current
from handrail.runs.shapes import view
from handrail.store.base import EventType, NewEvent, RunRecord, RunStatus, RunUpdate

if TYPE_CHECKING:
    from handrail.runs.approvals import Answer, InputRequired, Question
    from handrail.runs.request import Request


class Decisions:
    """Approve, decline, and what a run waiting for a person answers meanwhile."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def ask(
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
        with off_the_clock():  # a person takes their time
            if self.ledger.tracer is not None:
                with self.ledger.tracer.span("approval ask", **{"handrail.run.id": run.id}) as span:
                    decision = approver.ask(question)
                    span.set("handrail.approval.answered", decision is not None)
            else:
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
        from handrail.runs.approvals import Question, new_nonce

        nonce, kept = new_nonce()
        step_id = str(step["id"])
        asked = NewEvent(EventType.APPROVAL_ASKED, step_id, {"via": "client", "question": kept})
        written = self.ledger.write(run, RunUpdate(), [asked], self.ledger.owner(request))
        title = str(step.get("title", step_id))
        return Question(run.id, step_id, title, output, run.workflow_id, written.events, nonce)

    def _answered(self, request: Request, run: RunRecord, given: Answer) -> dict[str, Any]:
        """A 2026-07-28 retry's answer: used when its requestState names the question put
        for this run's pending approval, still unanswered; refused otherwise."""
        from handrail.runs.approvals import parse_request_state

        if given.request_state is None:
            raise answer_refused(
                run, "the call carries no requestState, so it answers no question handrail asked"
            )
        parsed = parse_request_state(given.request_state)
        if parsed is None:
            raise answer_refused(run, "its requestState is not one handrail gave")
        run_id, seq, nonce = parsed
        if run_id != run.id:
            raise answer_refused(run, "its requestState is for another run")
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
        from handrail.runs.approvals import same_digest

        if not machine.allows(run.status, EventType.APPROVED):
            raise answer_refused(
                run, f"the run is {run.status}: it waits for no approval, so no question is open"
            )
        events = self.ledger.events(run.id)
        asked = next((e for e in events if e.seq == seq), None)
        if asked is None or asked.type != EventType.APPROVAL_ASKED:
            raise answer_refused(run, "handrail asked no such question")
        if nonce is not None and not same_digest(nonce, asked.data.get("question")):
            raise answer_refused(run, "its requestState does not match the question handrail asked")
        later = [e.type for e in events if e.seq > seq]
        if EventType.APPROVED in later or EventType.DECLINED in later:
            raise answer_refused(run, "that question was answered already, and an answer counts once")
        if EventType.AWAITING_APPROVAL in later:
            raise answer_refused(
                run, "that question was for an earlier approval; this one has not been asked yet"
            )
        if EventType.APPROVAL_ASKED in later:
            raise answer_refused(run, "a later question replaced it; only the latest one can be answered")

    def _pending(self, run: RunRecord) -> tuple[str, str]:
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

    def while_waiting(
        self, request: Request, run: RunRecord, step_id: str | None, changes: Mapping[str, Any] | None
    ) -> dict[str, Any] | InputRequired:
        pending, output = self._pending(run)
        if step_id is not None and step_id != pending:
            raise not_current(step_id, run)
        if changes:
            raise InvalidParams(
                data={
                    "details": "the run is waiting for a person to approve its step; its context "
                    "cannot change until they decide"
                }
            )
        step = Position.stored(run.position).step
        if step is not None:
            return self.ask(request, run, step, output)
        return self._waiting_answer(run)

    def _waiting_answer(self, run: RunRecord) -> dict[str, Any]:
        step_id = _current_id(run)
        approve = f"handrail runs approve {run.id}"
        decline = f"handrail runs decline {run.id}"
        how = f"Ask the user to run `{approve}` (or `{decline} --comment ...` to send it back)"
        url = self.ledger.dashboard_url
        page = url and f"{url.rstrip('/')}/runs/{run.id}"
        if page:
            how = (
                f"Ask the user to approve or decline it on the dashboard page {page}, or to run "
                f"`{approve}` (or `{decline} --comment ...` to send it back)"
            )
        return {
            "runId": run.id,
            "accepted": False,
            "status": RunStatus.AWAITING_APPROVAL.value,
            "approval": {
                "stepId": step_id,
                "approve": approve + " [--comment TEXT]",
                "decline": decline + " [--comment TEXT]",
                "message": f"The output passed its rules and checks, but step `{step_id}` needs a "
                f"person's approval. {how}. Wait until they have, then call workflow_continue with "
                "this runId and stepId (the output may be left out) to go on.",
                **({"page": page} if page else {}),
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
                        raise _next_time_round(run, step_id, event.data)
                    return {
                        "runId": run.id,
                        "accepted": True,
                        "status": run.status.value,
                        "approved": _decision_data(event.data),
                        "message": _approved_message(run, step_id, event.data),
                        **view(run),
                    }
                issues, suggestions = _declined_issue(event.data)
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
        if self.ledger.tracer is not None:
            attributes: dict[str, str | bool] = {
                "handrail.run.id": run_id,
                "handrail.approval.approved": approve,
                "handrail.via": via,
            }
            with self.ledger.tracer.span("approval decide", **attributes):
                return self._decided(
                    request, run_id, approve, person=person, comment=comment, question=question, via=via
                )
        return self._decided(
            request, run_id, approve, person=person, comment=comment, question=question, via=via
        )

    def _decided(
        self,
        request: Request,
        run_id: str,
        approve: bool,
        *,
        person: str,
        comment: str | None,
        via: str,
        question: tuple[int, str | None] | None,
    ) -> dict[str, Any]:

        def once() -> dict[str, Any]:
            run = self.ledger.run(request, run_id)
            if question is not None:
                self._open_question(run, *question)
            decision = EventType.APPROVED if approve else EventType.DECLINED
            if not machine.allows(run.status, decision):
                details = f"the run is {run.status}, not waiting for a person's approval"
                raise RunNotActive(data={"runId": run.id, "status": run.status.value, "details": details})
            step_id, output = self._pending(run)
            decided: dict[str, Any] = {"person": person, "via": via}
            if comment:
                decided["comment"] = comment
            if question is not None:
                decided["question"] = question[0]
            if not approve:
                written = self.ledger.write(run, RunUpdate(), [NewEvent(decision, step_id, decided)], person)
                issues, suggestions = _declined_issue(decided)
                return {
                    "runId": run.id,
                    "accepted": False,
                    "status": written.status.value,
                    "declined": _decision_data(decided),
                    "issues": issues,
                    "suggestions": suggestions,
                    **view(written),
                }
            workflow = self.ledger.pinned(None, run)
            position = Position.stored(run.position)
            after, result = position.advanced(workflow, run.context, done=step_id)
            events = [
                NewEvent(decision, step_id, decided),
                NewEvent(EventType.ACCEPTED, step_id, {"output": output, **position.shown_title()}),
            ]
            if result.is_complete:
                events.append(NewEvent(EventType.COMPLETED))
            change = RunUpdate(position=after.to_stored(), accepted=run.accepted + 1)
            written = self.ledger.write(run, change, events, person)
            return {
                "runId": run.id,
                "accepted": True,
                "status": written.status.value,
                "approved": _decision_data(decided),
                "message": _approved_message(written, step_id, decided),
                **view(written),
            }

        return self.ledger.retrying(run_id, once)


def _decision_data(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: data[k] for k in ("person", "comment") if k in data}


def _declined_issue(data: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    issue = f"{data.get('person', 'a person')} declined this step"
    comment = data.get("comment")
    if comment:
        issue += f": {comment}"
    return [issue], ["Change the output as the comment asks, then submit the step again."]


def _current_id(run: RunRecord) -> str | None:
    return Position.stored(run.position).step_id


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
    if run.status == RunStatus.COMPLETED:
        return said + "; the run is completed, nothing is left to do."
    current = _current_id(run)
    if current is None:
        return said + "; the run waits for context (see guidance)."
    return said + f"; the run goes on with step `{current}`."
