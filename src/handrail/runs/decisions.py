"""A person's decision on a step that waits for approval (spec/runs.md, "Approvals"),
given by `handrail runs approve|decline`, the dashboard, a link, or an answer through
the client (runs/questions.py): who may give it, its checks (the channel, the question
it answers, the person's presence) and what it writes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from handrail.model.errors import RunNotActive, RunNotFound
from handrail.model.runs import Event, EventType, NewEvent, RunRecord, RunUpdate
from handrail.runs import machine
from handrail.runs.approvers import Pending
from handrail.runs.awaiting import Awaiting
from handrail.runs.decision_words import approved_message, decision_data, declined_issue
from handrail.runs.ledger import Ledger
from handrail.runs.links import VIA as LINK_VIA
from handrail.runs.position import Position
from handrail.runs.presence import (
    GATE_WATCHES,
    TREE_DEPTH,
    Decision,
    Presence,
    PresenceError,
    accepted,
    gate_watches,
    presence_needed,
)
from handrail.runs.refusals import answer_refused, not_allowed
from handrail.runs.shapes import view

if TYPE_CHECKING:
    from handrail.model.request import Request


AGENT_REFUSED = "scope: an agent's token (scope `agent`) cannot approve or decline; a person's can"

Verdict = Literal["approve", "decline"]


class How(TypedDict, total=False):
    """How a person decided, beside who they are (`Decisions.decide`'s keywords)."""

    comment: str | None
    via: str
    presence: Presence | None
    shared: bool


@dataclass(frozen=True, slots=True)
class Signed:
    """What a decision brings of the person's presence: a passkey's assertion, if any,
    and whether it came through a channel the agent shares."""

    presence: Presence | None = None
    shared: bool = False


UNSIGNED = Signed()


class Decisions:
    """Approve or decline, and who may."""

    def __init__(self, ledger: Ledger, awaiting: Awaiting) -> None:
        self.ledger = ledger
        self.awaiting = awaiting

    def decide(
        self,
        request: Request,
        run_id: str,
        verdict: Verdict,
        *,
        person: str,
        comment: str | None = None,
        via: str = "cli",
        question: tuple[int, str | None] | None = None,
        presence: Presence | None = None,
        shared: bool = False,
    ) -> dict[str, Any]:
        """A person approves the step the run waits on (it is accepted and the run goes on)
        or declines it (the run stays on the step, and the comment is an issue).
        `request`: whose run it is; `via`: where the person decided (`cli`, `dashboard`),
        recorded on the event; `question`: (seq, nonce) of the question a client's answer
        is for, used only while that question is open (checked on the run as it is
        written); `presence`: their passkey's signed assertion; `shared`: the channel is
        one the agent shares (`handrail runs`; the dashboard without tokens)."""
        approve = verdict == "approve"
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
            self.open_question(run, *question)
        decision = EventType.APPROVED if approve else EventType.DECLINED
        if not machine.allows(run.status, decision):
            details = f"the run is {run.status}, not waiting for a person's approval"
            raise RunNotActive(data={"runId": run.id, "status": run.status.value, "details": details})
        step_id, output = self.awaiting.step(run)
        decided: dict[str, Any] = {"person": person, "via": via}
        if comment:
            decided["comment"] = comment
        if question is not None:
            decided["question"] = question[0]
        found = self.awaiting.approval(run)
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
            waiting = self.awaiting.approval(found, events)
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

    def open_question(self, run: RunRecord, seq: int, nonce: str | None) -> None:
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
                raise presence_needed(run.id, reason, self.awaiting.page(run.id))
            return
        store = self.ledger.store
        decision: Decision = "approve" if approve else "decline"
        signed_for = (run.id, step_id, decision)
        try:
            decided["presence"] = accepted(store, store.events(run.id), presence, signed_for, person)
        except PresenceError as exc:
            raise not_allowed(run, f"presence: {exc}") from None

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
