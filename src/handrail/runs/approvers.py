"""Who may decide on a pending approval (spec/runs.md, "Who may approve"): the step's
approval rule, the run's owner, what the log says so far and the server's approval
channels, read into one value and asked about one person. Pure: the caller reads the
log and the people; nothing here touches the store."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from handrail.model.runs import Event, EventType
from handrail.model.workflow import ANYONE, ApprovalRule

# where an approval can come from, as `--approval-channels` names them
CHANNELS = ("dashboard", "cli", "elicitation", "api")
OPTION = "--approval-channels"
KEPT = "approvalChannels"  # the started event's record of them, which `pending` reads back

Roles = Callable[[str], frozenset[str]]


def no_roles(person: str) -> frozenset[str]:
    return frozenset()


def default_channels(with_tokens: bool) -> frozenset[str]:
    """Not the client's (elicitation) once tokens tell people apart, since the client is
    the agent's; not the JSON API without tokens, since a request there carries nothing
    that tells a person from any local program (the agent's shell included)."""
    return frozenset(CHANNELS) - ({"elicitation"} if with_tokens else {"api"})


def parse_channels(text: str) -> frozenset[str]:
    """`dashboard,cli,...`; ValueError names what is not a channel."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in CHANNELS]
    if unknown or not names:
        raise ValueError(
            f"{OPTION}: `{', '.join(unknown) or text}` is not a channel; choose from {', '.join(CHANNELS)}"
        )
    return frozenset(names)


def recorded_channels(kept: frozenset[str] | None) -> dict[str, Any]:
    """What a run's started event records of its server's channels: nothing when it
    takes approvals from all of them."""
    return {} if kept is None or kept >= set(CHANNELS) else {KEPT: sorted(kept)}


@dataclass(frozen=True, slots=True)
class Pending:
    """One pending approval, as its rule and the run's log since it began say."""

    step_id: str
    rule: ApprovalRule
    owner: str  # who started the run
    since: str  # when the step began to wait (the `awaiting_approval` event's time)
    escalated: bool  # the escalation role has been added (its time has come)
    given: tuple[str, ...]  # the people who approved so far, in order
    channels: frozenset[str] | None  # the channels the run's server took approvals from

    @property
    def allowed(self) -> tuple[str, ...]:
        """The approvers, with the escalation role once it is added."""
        role = self.rule.escalate_role
        if self.escalated and role is not None and f"role:{role}" not in self.rule.approvers:
            return (*self.rule.approvers, f"role:{role}")
        return self.rule.approvers

    @property
    def still_needed(self) -> int:
        return max(self.rule.approvals - len(self.given), 0)

    def names(self, person: str, roles: frozenset[str]) -> bool:
        """Whether the approvers name `person`, by name or by one of their roles."""
        for entry in self.allowed:
            if entry == person or (entry.startswith("role:") and entry[5:] in roles):
                return True
        return False

    def refusal(self, person: str, roles: frozenset[str], *, approve: bool = True) -> str | None:
        """Why `person` may not decide (the rule named first), or None when they may."""
        if self.rule.separate and person == self.owner:
            return f"separateApprover: {person} started this run, so another person must decide"
        allowed = self.allowed
        if allowed and not self.names(person, roles):
            held = f" (roles: {', '.join(sorted(roles))})" if roles else ""
            return f"approvers: {person}{held} is not among this step's approvers: {', '.join(allowed)}"
        if approve and person in self.given:
            return (
                f"approvals: {person} has approved already; {self.rule.approvals} different "
                f"people must, and {self.still_needed} more is needed"
            )
        return None

    def refused_channel(self, channel: str, served: Collection[str] | None) -> str | None:
        for kept, whose in ((served, "this server"), (self.channels, "the server that started this run")):
            if kept is not None and channel not in kept:
                return (
                    f"{OPTION}: {whose} takes approvals from {', '.join(sorted(kept))}, not from `{channel}`"
                )
        return None

    @property
    def open_to_others(self) -> bool:
        """Whether people besides the owner may decide: the step names approvers, keeps
        the owner out, or asks for more distinct people than the owner alone (a quorum
        with no `approvers` is open to every person of the server, or it could never
        be reached)."""
        return bool(self.rule.approvers) or self.rule.separate or self.rule.approvals > 1

    def may_see(self, person: str, roles: frozenset[str]) -> bool:
        """Whether the run's page is shown to `person` though it is not theirs: they are
        among those who may decide on it."""
        if not self.open_to_others:
            return False  # the run's owner decides, as ever
        return self.refusal(person, roles, approve=False) is None


def pending(
    events: Sequence[Event],
    rule_of: Callable[[str], ApprovalRule | None],
    owner: str,
    now: datetime,
) -> Pending | None:
    """The approval the log's last `awaiting_approval` opened, or None when none is open;
    `rule_of(step_id)`: that step's rule."""
    at = next(
        (i for i in range(len(events) - 1, -1, -1) if events[i].type == EventType.AWAITING_APPROVAL), None
    )
    if at is None or events[at].step_id is None:
        return None
    later = events[at + 1 :]
    if any(e.type in (EventType.APPROVED, EventType.DECLINED) for e in later):
        return None
    given = tuple(
        dict.fromkeys(str(e.data.get("person")) for e in later if e.type == EventType.APPROVAL_GIVEN)
    )
    rule = rule_of(str(events[at].step_id)) or ANYONE
    since = events[at].at
    escalated = any(e.type == EventType.ESCALATED for e in later) or _due(since, rule.escalate_after, now)
    started = next((e for e in events if e.type == EventType.STARTED), None)
    kept = started.data.get(KEPT) if started is not None else None
    channels = frozenset(str(c) for c in kept) if isinstance(kept, list) else None
    return Pending(str(events[at].step_id), rule, owner, since, escalated, given, channels)


def parse_time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _due(since: str, after: int | None, now: datetime) -> bool:
    began = parse_time(since)
    return after is not None and began is not None and (now - began).total_seconds() >= after


def reminders_due(events: Sequence[Event], rule: ApprovalRule, now: datetime) -> int:
    """How many `reminded` events the pending approval should have by now, less those it has."""
    at = next(
        (i for i in range(len(events) - 1, -1, -1) if events[i].type == EventType.AWAITING_APPROVAL), None
    )
    if at is None or rule.remind_after is None:
        return 0
    began = parse_time(events[at].at)
    if began is None:
        return 0
    owed = int((now - began).total_seconds() // rule.remind_after)
    had = sum(1 for e in events[at + 1 :] if e.type == EventType.REMINDED)
    return 1 if owed > had else 0
