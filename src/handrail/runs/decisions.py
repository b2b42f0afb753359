"""A person's decisions on a step that waits for approval (spec/runs.md, "Approvals"):
asked through the client when it can ask, else by `handrail runs approve|decline`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from handrail.model.approvals import Answer, Decision, InputRequired, Question
from handrail.model.errors import HandrailError, InvalidParams, RunNotActive, RunNotFound, StateError
from handrail.model.runs import Event, EventType, NewEvent, RunRecord, RunStatus, RunUpdate
from handrail.model.workflow import ApprovalRule, Step
from handrail.notify.targets import shown
from handrail.runs import machine
from handrail.runs.approvers import Pending, pending
from handrail.runs.decision_words import approved_message, decision_data, declined_issue, next_time_round
from handrail.runs.ledger import Ledger, off_the_clock
from handrail.runs.links import VIA as LINK_VIA
from handrail.runs.position import Position
from handrail.runs.presence import (
    GATE_WATCHES,
    TREE_DEPTH,
    Presence,
    PresenceError,
    check,
    gate_watches,
    presence_needed,
    signable_heads,
)
from handrail.runs.refusals import answer_refused, not_allowed, not_current
from handrail.runs.shapes import view

if TYPE_CHECKING:
    from handrail.model.request import Request


AGENT_REFUSED = "scope: an agent's token (scope `agent`) cannot approve or decline; a person's can"


@dataclass(frozen=True, slots=True)
class Signed:
    """What a decision brings of the person's presence: a passkey's assertion, if any,
    and whether it came through a channel the agent shares."""

    presence: Presence | None = None
    shared: bool = False


UNSIGNED = Signed()


class Decisions:
    """Approve, decline, and what a run waiting for a person answers meanwhile."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def ask(
        self, request: Request, run: RunRecord, step: Mapping[str, Any], output: str
    ) -> dict[str, Any] | InputRequired:
        """Ask the person through the client when the request says how; else say who must
        act. An answer the call already carries counts only for a question asked before.
        A client that takes URL mode is sent to the run's page when there is one: it is
        asked even where its answer would not count, since its answer never decides."""
        approver = request.approver
        if approver is None:
            return self._waiting_answer(run)
        given = approver.given()
        if given is not None:
            return self._answered(request, run, given)
        page = self._page_for_client(run) if approver.url else None
        if page is None and not (approver.form and self._client_may_answer(request, run)):
            return self._waiting_answer(run)  # its answer would not count: nobody is asked
        question = self._question(request, run, step, output, page)
        asking = self.ledger.settings.tracer.span("approval ask", **{"handrail.run.id": run.id})
        with off_the_clock(), asking as span:  # a person takes their time
            decision = approver.ask(question)
            span.set("handrail.approval.answered", decision is not None)
        if decision is None and page is None:  # asked, and no answer came in time
            return self._unanswered(request, run.id, question.step_id, question.asked, "none")
        if decision is None:
            return self._waiting_answer(run)
        if not isinstance(decision, Decision):
            return decision  # the client asks the person, then calls again
        if page is not None:  # on the page a person decides, not the client
            return self._waiting_answer(run)
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
                return self.after_decision(run, step_id)  # a person decided meanwhile
            data = {"via": "client", "question": seq, "answer": answer}
            unanswered = NewEvent(EventType.APPROVAL_UNANSWERED, step_id, data)
            written = self.ledger.write(run, RunUpdate(), [unanswered], self.ledger.owner(request))
            return self._waiting_answer(written, client_answer=answer)

        return self.ledger.retrying(run_id, once)

    def _question(
        self, request: Request, run: RunRecord, step: Mapping[str, Any], output: str, page: str | None
    ) -> Question:
        """A question put to the client for the approval the run waits on, recorded as an
        `approval_asked` event that keeps the digest of its nonce, and the page it sends
        the person to (URL mode; no answer to such a question decides)."""
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

    def page(self, run_id: str) -> str | None:
        """The run's dashboard page (`--public-url`, else the address this server serves
        the dashboard at); None when the server knows no dashboard address."""
        url = self.ledger.settings.dashboard_url
        return f"{url.rstrip('/')}/runs/{run_id}" if url else None

    def _page_for_client(self, run: RunRecord) -> str | None:
        """The page a URL-mode question sends the person to: None without a dashboard
        address, or when this server or the run takes no approval from the dashboard."""
        page = self.page(run.id)
        found = self.waiting(run) if page is not None else None
        if found is not None and found.refused_channel("dashboard", self.ledger.settings.approval_channels):
            return None
        return page

    def settled(self, run_id: str, seq: int) -> bool:
        """Whether question `seq` of the run is done with: a person decided after it, or
        the run waits for no approval (any more)."""
        run = self.ledger.store.get(run_id)
        if run is None or run.status != RunStatus.AWAITING_APPROVAL:
            return True
        decided = (EventType.APPROVED, EventType.DECLINED)
        return any(e.seq > seq and e.type in decided for e in self.ledger.events(run_id))

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
            return self._waiting_answer(run)  # `accept` there says the person opened the page
        if given.decision.action == "cancel":  # the client closed the question: nobody declined
            self._open_question(run, seq, nonce)
            return self._unanswered(request, run.id, self._pending(run)[0], seq, "cancel")
        via = request.approver.via if request.approver is not None else "elicitation"
        return self._client_decided(request, run, given.decision, (seq, nonce), via)

    def _client_decided(
        self, request: Request, run: RunRecord, decision: Decision, question: tuple[int, str | None], via: str
    ) -> dict[str, Any]:
        """A person's decision the client brought back, on the question it answers, through `via`."""
        return self._decide(
            request,
            run.id,
            decision.approve,
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
        found = self.waiting(run)
        if found is None:
            return True
        channel_ok = found.refused_channel("elicitation", self.ledger.settings.approval_channels) is None
        return channel_ok and request.scope != "agent" and not found.rule.separate

    def waiting(self, run: RunRecord, events: list[Event] | None = None) -> Pending | None:
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

    def refusal(
        self, request: Request, found: Pending, person: str, channel: str, approve: bool
    ) -> str | None:
        """Why `person`, through `channel` (one of --approval-channels), may not decide on
        `found`; None when they may."""
        if request.scope == "agent":
            return AGENT_REFUSED
        refused = found.refused_channel(channel, self.ledger.settings.approval_channels)
        if refused is not None:
            return refused
        if found.rule.separate and channel == "elicitation":
            return (
                "separateApprover: an answer through the agent's client is the answer of whoever "
                "started the run; another person must decide"
            )
        return found.refusal(person, self.ledger.settings.roles(person), approve=approve)

    def readable(self, request: Request, run_id: str, person: str) -> RunRecord:
        """The run, when it is the asking person's, waits for an approval they may give,
        or was decided on by them. Another's run whose step names its approvers is refused
        naming the rule; any other run of another person is not found, as ever."""
        found = self.ledger.store.get(run_id)
        if found is not None and found.owner != self.ledger.owner(request):
            events = self.ledger.events(found.id)
            waiting = self.waiting(found, events)
            roles = self.ledger.settings.roles(person)
            if _decided_by(events, person):
                pass
            elif waiting is None or not waiting.open_to_others:
                found = None
            elif not waiting.may_see(person, roles):
                raise not_allowed(found, waiting.refusal(person, roles, approve=False) or "approvers")
        if found is None:
            raise RunNotFound(data={"runId": run_id})
        return found

    def _open_question(self, run: RunRecord, seq: int, nonce: str | None) -> None:
        """Refuse an answer unless question `seq` (with `nonce`, when the client carried one
        back) is the run's latest word on the approval it waits for."""
        from handrail.runs.approvals import same_digest  # lazy: loaded only when a person is asked

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
        if EventType.APPROVAL_UNANSWERED in later:
            raise answer_refused(
                run, "the client closed that question without an answer; the next call asks again"
            )

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

    def _waiting_answer(self, run: RunRecord, client_answer: str | None = None) -> dict[str, Any]:
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

    def approve(
        self,
        request: Request,
        run_id: str,
        *,
        person: str,
        comment: str | None = None,
        via: str = "cli",
        presence: Presence | None = None,
        shared: bool = False,
    ) -> dict[str, Any]:
        """A person approves the step the run waits on: it is accepted and the run goes on.
        `request`: whose run it is; `via`: where the person decided (`cli`, `dashboard`),
        recorded on the event; `presence`: their passkey's signed assertion; `shared`: the
        channel is one the agent shares (`handrail runs`; the dashboard without tokens)."""
        return self._decide(
            request, run_id, True, person=person, comment=comment, via=via, presence=presence, shared=shared
        )

    def decline(
        self,
        request: Request,
        run_id: str,
        *,
        person: str,
        comment: str | None = None,
        via: str = "cli",
        presence: Presence | None = None,
        shared: bool = False,
    ) -> dict[str, Any]:
        """A person declines it: the run stays on the step, and the comment is an issue."""
        return self._decide(
            request, run_id, False, person=person, comment=comment, via=via, presence=presence, shared=shared
        )

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
        presence: Presence | None = None,
        shared: bool = False,
    ) -> dict[str, Any]:
        """`question`: (seq, nonce) of the question a client's answer is for; the answer
        is used only while that question is open (checked on the run as it is written)."""
        signed = Signed(presence, shared)
        tracer = self.ledger.settings.tracer
        attributes: dict[str, str | bool] = {
            "handrail.run.id": run_id,
            "handrail.approval.approved": approve,
            "handrail.via": via,
        }
        with tracer.span("approval decide", **attributes):
            return self.ledger.retrying(
                run_id,
                lambda: self._decide_once(request, run_id, approve, question, person, comment, via, signed),
            )

    def _decide_once(
        self,
        request: Request,
        run_id: str,
        approve: bool,
        question: tuple[int, str | None] | None,
        person: str,
        comment: str | None,
        via: str,
        signed: Signed = UNSIGNED,
    ) -> dict[str, Any]:
        """One attempt at writing a decision (`Ledger.retrying` runs it again on a conflict)."""
        run = self.readable(request, run_id, person)
        if request.scope == "agent":  # whatever the run waits on, an agent's token never decides
            raise not_allowed(run, AGENT_REFUSED)
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
        found = self.waiting(run)
        unruled = found is not None and not found.open_to_others
        if unruled and run.owner != self.ledger.owner(request):  # a step no rule opens: its owner's
            raise RunNotFound(data={"runId": run_id})
        if found is not None:
            # a client's answer (to a question) comes through the `elicitation` channel; a
            # link opened by the person confirms their command line's (runs/links.py)
            channel = "elicitation" if question is not None else ("cli" if via == LINK_VIA else via)
            refused = self.refusal(request, found, person, channel, approve)
            if refused is not None:
                raise not_allowed(run, refused)
            self._present(run, found, step_id, approve, person, channel, signed, decided)
            if approve and found.still_needed > 1:
                return self._one_of_several(run, step_id, decided, found)
            if approve and found.rule.approvals > 1:
                decided["approvers"] = [*found.given, person]
        if not approve:
            written = self.ledger.write(run, RunUpdate(), [NewEvent(decision, step_id, decided)], person)
            issues, suggestions = declined_issue(decided)
            return {
                "runId": run.id,
                "accepted": False,
                "status": written.status.value,
                "declined": decision_data(decided),
                "issues": issues,
                "suggestions": suggestions,
                **view(written),
            }
        workflow = self.ledger.pinned(None, run)
        position = Position.stored(run.position)
        after, _ = position.advanced(workflow, run.context, done=step_id)
        events = [
            NewEvent(decision, step_id, decided),
            NewEvent(EventType.ACCEPTED, step_id, {"output": output, **position.shown_title()}),
        ]
        if after.is_complete:
            events.append(NewEvent(EventType.COMPLETED))
        change = RunUpdate(position=after.to_stored(), accepted=run.accepted + 1)
        written = self.ledger.write(run, change, events, person)
        return {
            "runId": run.id,
            "accepted": True,
            "status": written.status.value,
            "approved": decision_data(decided),
            "message": approved_message(written, step_id, decided),
            **view(written),
        }

    def _present(
        self,
        run: RunRecord,
        found: Pending,
        step_id: str,
        approve: bool,
        person: str,
        channel: str,
        signed: Signed,
        decided: dict[str, Any],
    ) -> None:
        """Check the passkey's assertion the decision came with, and keep it in `decided`;
        without one, refuse when this decision needs the person (`presence_reason`)."""
        presence = signed.presence
        if presence is None:
            reason = self.presence_reason(run, found, person, channel, signed.shared)
            if reason is not None:
                raise presence_needed(run.id, reason, self.page(run.id))
            return
        if presence.head not in signable_heads(self.ledger.events(run.id)):
            raise not_allowed(run, "presence: the run changed since the passkey signed; sign again")
        try:
            count = check(presence, run.id, step_id, approve, self.ledger.store.passkeys(person), person)
        except PresenceError as exc:
            raise not_allowed(run, f"presence: the passkey's assertion does not hold: {exc}") from None
        self.ledger.store.passkey_used(presence.credential_id, count)
        decided["presence"] = presence.recorded()

    def presence_reason(
        self, run: RunRecord, found: Pending, person: str, channel: str, shared: bool
    ) -> str | None:
        """Why a decision on `found` through `channel` needs the person's passkey; None
        when it does not (spec/runs.md, "Presence")."""
        if self.ledger.settings.require_presence:
            return "the server runs with --require-presence, so every approval needs the person's passkey"
        if found.rule.presence == "passkey":
            return 'the workflow says "approval": {"presence": "passkey"} for this step'
        if shared and self.gate_watches(run):
            return (
                f"{GATE_WATCHES}, and the {channel} is a channel the agent shares (the same machine and user)"
            )
        if channel == "dashboard" and self.ledger.store.passkeys(person):
            return f"{person} registered a passkey, so every dashboard approval asks for it"
        return None

    def gate_watches(self, run: RunRecord) -> bool:
        """Whether the gate has seen this run or a run above it in its tree."""
        current: RunRecord | None = run
        for _ in range(TREE_DEPTH):
            if current is None:
                return False
            if gate_watches(self.ledger.events(current.id)):
                return True
            current = self.ledger.store.get(current.parent_id) if current.parent_id else None
        return False

    def _one_of_several(
        self, run: RunRecord, step_id: str, decided: dict[str, Any], found: Pending
    ) -> dict[str, Any]:
        """An approval the step needs more of: recorded, and the run waits on."""
        given = NewEvent(EventType.APPROVAL_GIVEN, step_id, decided)
        written = self.ledger.write(run, RunUpdate(), [given], str(decided["person"]))
        people = [*found.given, str(decided["person"])]
        more = found.rule.approvals - len(people)
        return {
            "runId": run.id,
            "accepted": False,
            "status": written.status.value,
            "approvalGiven": decision_data(decided),
            "approvals": {"given": people, "needed": found.rule.approvals},
            "message": f"{decided['person']} approved step `{step_id}`; {more} more "
            f"{'person' if more == 1 else 'people'} must approve it before it is accepted.",
            **view(written),
        }


def _decided_by(events: list[Event], person: str) -> bool:
    decisions = (EventType.APPROVED, EventType.DECLINED, EventType.APPROVAL_GIVEN)
    return any(e.type in decisions and e.data.get("person") == person for e in events)


def _current_id(run: RunRecord) -> str | None:
    return Position.stored(run.position).step_id
