"""A person asked through the agent's client for the approval a run waits on (spec/runs.md,
"Approvals"): the question put and recorded, the answer the client brings back, and a
question closed or left without one. Only a person's answer decides (runs/decisions.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from handrail.model.errors import InvalidParams
from handrail.model.runs import EventType, NewEvent, RunRecord, RunUpdate
from handrail.runs import machine
from handrail.runs.awaiting import Awaiting
from handrail.runs.decisions import Decisions
from handrail.runs.ledger import Ledger, off_the_clock
from handrail.runs.position import Position
from handrail.runs.refusals import answer_refused, not_current

if TYPE_CHECKING:
    from handrail.model.approvals import Answer, Decision, InputRequired, Question
    from handrail.model.request import Request


class Questions:
    """The approval a run waits on, asked through the client when it can ask."""

    def __init__(self, ledger: Ledger, awaiting: Awaiting, decisions: Decisions) -> None:
        self.ledger = ledger
        self.awaiting = awaiting
        self.decisions = decisions

    def while_waiting(
        self, request: Request, run: RunRecord, step_id: str | None, changes: Mapping[str, Any] | None
    ) -> dict[str, Any] | InputRequired:
        """workflow_continue on a run waiting for a person: they are asked through the
        client where it can ask, else the answer says where they decide."""
        pending, output = self.awaiting.step(run)
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
        return self.awaiting.answer(run)

    def ask(
        self, request: Request, run: RunRecord, step: Mapping[str, Any], output: str
    ) -> dict[str, Any] | InputRequired:
        """Ask the person through the client when the request says how; else say who must
        act. An answer the call already carries counts only for a question asked before.
        A client that takes URL mode is sent to the run's page when there is one: it is
        asked even where its answer would not count, since its answer never decides."""
        from handrail.model.approvals import Decision  # lazy: loaded only when a person is asked

        approver = request.approver
        if approver is None:
            return self.awaiting.answer(run)
        given = approver.given()
        if given is not None:
            return self._answered(request, run, given)
        page = self._page_for_client(run) if approver.url else None
        if page is None and not (approver.form and self._client_may_answer(request, run)):
            return self.awaiting.answer(run)  # its answer would not count: nobody is asked
        question = self._question(request, run, step, output, page)
        asking = self.ledger.settings.tracer.span("approval ask", **{"handrail.run.id": run.id})
        with off_the_clock(), asking as span:  # a person takes their time
            decision = approver.ask(question)
            span.set("handrail.approval.answered", decision is not None)
        if decision is None and page is None:  # asked, and no answer came in time
            return self._unanswered(request, run.id, question.step_id, question.asked, "none")
        if decision is None:
            return self.awaiting.answer(run)
        if not isinstance(decision, Decision):
            return decision  # the client asks the person, then calls again
        if page is not None:  # on the page a person decides, not the client
            return self.awaiting.answer(run)
        if decision.action == "cancel":  # the client closed the question: nobody declined
            return self._unanswered(request, run.id, question.step_id, question.asked, "cancel")
        return self._client_decided(request, run, decision, (question.asked, None), approver.via)

    def _unanswered(
        self, request: Request, run_id: str, step_id: str, seq: int, answer: str
    ) -> dict[str, Any]:
        """A question the client closed without a person's answer (`cancel`), or left
        unanswered (`none`): recorded as such, never as a decision; the run waits on, and
        the answer says where a person can decide."""

        def once() -> dict[str, Any]:
            run = self.ledger.run(request, run_id)
            if not machine.allows(run.status, EventType.APPROVAL_UNANSWERED):
                return self.awaiting.after_decision(run, step_id)  # a person decided meanwhile
            data = {"via": "client", "question": seq, "answer": answer}
            unanswered = NewEvent(EventType.APPROVAL_UNANSWERED, step_id, data)
            written = self.ledger.write(run, RunUpdate(), [unanswered], self.ledger.owner(request))
            return self.awaiting.answer(written, client_answer=answer)

        return self.ledger.retrying(run_id, once)

    def _question(
        self, request: Request, run: RunRecord, step: Mapping[str, Any], output: str, page: str | None
    ) -> Question:
        """A question put to the client for the approval the run waits on, recorded as an
        `approval_asked` event that keeps the digest of its nonce, and the page it sends
        the person to (URL mode; no answer to such a question decides)."""
        from handrail.model.approvals import Question  # lazy: loaded only when a person is asked
        from handrail.runs.approvals import new_nonce  # lazy: loaded only when a person is asked

        nonce, kept = new_nonce()
        step_id = str(step["id"])
        data: dict[str, Any] = {"via": "client", "question": kept}
        if page is not None:
            data.update(mode="url", page=page)
        asked = NewEvent(EventType.APPROVAL_ASKED, step_id, data)
        written = self.ledger.write(run, RunUpdate(), [asked], self.ledger.owner(request))
        title = str(step.get("title", step_id))
        return Question(run.id, step_id, title, output, run.workflow_id, written.events, nonce, page)

    def _page_for_client(self, run: RunRecord) -> str | None:
        """The page a URL-mode question sends the person to: None without a dashboard
        address, or when this server or the run takes no approval from the dashboard."""
        page = self.awaiting.page(run.id)
        found = self.awaiting.approval(run) if page is not None else None
        if found is not None and found.refused_channel("dashboard", self.ledger.settings.approval_channels):
            return None
        return page

    def _answered(self, request: Request, run: RunRecord, given: Answer) -> dict[str, Any]:
        """A 2026-07-28 retry's answer: used when its requestState names the question put
        for this run's pending approval, still unanswered; refused otherwise."""
        from handrail.runs.approvals import parse_request_state  # lazy: loaded only when a person is asked

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
        if self._asked_for_the_page(run, seq):
            return self.awaiting.answer(run)  # `accept` there says the person opened the page
        if given.decision.action == "cancel":  # the client closed the question: nobody declined
            self.decisions.open_question(run, seq, nonce)
            return self._unanswered(request, run.id, self.awaiting.step(run)[0], seq, "cancel")
        via = request.approver.via if request.approver is not None else "elicitation"
        return self._client_decided(request, run, given.decision, (seq, nonce), via)

    def _client_decided(
        self, request: Request, run: RunRecord, decision: Decision, question: tuple[int, str | None], via: str
    ) -> dict[str, Any]:
        """A person's decision the client brought back, on the question it answers, through `via`."""
        return self.decisions.decide(
            request,
            run.id,
            "approve" if decision.approve else "decline",
            person=decision.person,
            comment=decision.comment,
            via=via,
            question=question,
        )

    def _asked_for_the_page(self, run: RunRecord, seq: int) -> bool:
        asked = next((e for e in self.ledger.events(run.id) if e.seq == seq), None)
        return (
            asked is not None and asked.type == EventType.APPROVAL_ASKED and asked.data.get("mode") == "url"
        )

    def _client_may_answer(self, request: Request, run: RunRecord) -> bool:
        """Whether an answer through the client could decide: the channel is taken, the
        token is not an agent's alone, and the step does not want another person than
        the one whose client started the run."""
        found = self.awaiting.approval(run)
        if found is None:
            return True
        channel_ok = found.refused_channel("elicitation", self.ledger.settings.approval_channels) is None
        return channel_ok and request.scope != "agent" and not found.rule.separate
