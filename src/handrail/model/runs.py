"""What a run is, as every layer holds it: its statuses and event types (StrEnums, stored
and sent as the same words), its record and its events. The store persists them
(store/base.py); the run layer and the dashboard read them from here."""

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, NamedTuple

from handrail.model.slotted import Slotted


class RunStatus(StrEnum):
    """Where a run stands. The values are what the store keeps and the wire shows."""

    ACTIVE = "active"
    AWAITING_APPROVAL = "awaiting_approval"  # a person must approve the current step
    COMPLETED = "completed"
    ABANDONED = "abandoned"


class EventType(StrEnum):
    """What an event of a run's log records; the values are stored as they are."""

    STARTED = "started"
    CONTEXT = "context"
    CHECK = "check"
    REJECTED = "rejected"
    AWAITING_APPROVAL = "awaiting_approval"
    APPROVAL_ASKED = "approval_asked"  # a question put to a client for the pending approval
    APPROVED = "approved"
    DECLINED = "declined"
    ACCEPTED = "accepted"
    COMPLETED = "completed"
    ABANDONED = "abandoned"
    GATE = "gate"  # what the agent's harness asked and what `handrail gate` decided
    APPROVAL_GIVEN = "approval_given"  # one of the approvals a step needs, not yet all of them
    REMINDED = "reminded"  # the approval has waited `remindAfter` (again)
    ESCALATED = "escalated"  # the approval has waited `escalateAfter`: its role may approve too
    MIGRATED = "migrated"  # moved to a newer version of its workflow (`handrail runs migrate`)
    CLAIMED = "claimed"  # a branch's holder and lease (workflow_claim)
    # the client closed a question put to it without a person's answer (`cancel`), or gave
    # none in time: no decision, and the run waits on
    APPROVAL_UNANSWERED = "approval_unanswered"
    VIOLATION = "violation"  # the gate undid a change the step forbids, however it was made
    USAGE = "usage"  # what one agent process `handrail drive` started spent on a step
    # a one-time link for the person's decision, sent out of band (runs/links.py): only its
    # token's hash is kept
    APPROVAL_LINK = "approval_link"


STATUSES: tuple[RunStatus, ...] = tuple(RunStatus)


# "open" runs: resumable, listed at start-up
ACTIVE_STATUSES: tuple[RunStatus, ...] = (RunStatus.ACTIVE, RunStatus.AWAITING_APPROVAL)


# The records are NamedTuples, not dataclasses: every gate hook reads them, and creating
# a dataclass costs several times more at import (and loads dataclasses, inspect, dis);
# a change is made with `_replace`.
class RunRecord(NamedTuple):
    id: str
    owner: str
    workspace: str
    workflow_id: str
    workflow_version: str
    source_hash: str  # the pinned workflow source, see `RunStore.put_source`
    goal: str
    status: RunStatus
    context: Mapping[str, Any]
    position: Mapping[str, Any]  # the engine's last answer: completedSteps, state, step, guidance, ...
    accepted: int  # steps accepted so far
    created_at: str
    updated_at: str
    version: int  # bumped by every update; the compare-and-set token
    events: int = 0  # how many events its log holds (the next one is number events + 1)
    head: str | None = None  # the hash of its last event (store/chain.py)
    stats: str | None = None  # what the next event's statistics summary needs (store/summary.py)
    # a run in a tree (spec/runs.md): the run that started it and the parent's step that
    # did; `branch` is its item's index when it is a branch of a parallel loop
    parent_id: str | None = None
    parent_step: str | None = None
    branch: int | None = None
    # who holds it (a claimed branch) and until when, ISO time as `updated_at`
    holder: str | None = None
    lease_until: str | None = None
    # the current step's gate digest (runs/gate_digest.py), JSON; None before one was written
    gate: str | None = None
    # the row's seal as read (store/state_seal.py), and what of the row does not match it
    # (empty: all does); a read that finds a mismatch says so (spec/runs.md)
    seal: str | None = None
    tampered: tuple[str, ...] = ()

    # the seal as read, and what of it failed, are not part of the run: compared without them
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunRecord):
            return NotImplemented
        return self[:_COMPARED] == other[:_COMPARED]

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self[:_COMPARED])

    @property
    def current_step(self) -> dict[str, Any] | None:
        step = self.position.get("step")
        return {"id": step["id"], "title": step["title"]} if isinstance(step, dict) else None


_COMPARED = RunRecord._fields.index("seal")  # the fields before it are the run's


class NewEvent(Slotted):
    __slots__ = ("data", "step_id", "type")

    def __init__(
        self,
        type: EventType,
        step_id: str | None = None,
        data: Mapping[str, Any] = {},  # output, issues, contextChanges, reason ... (shared: never changed)
    ) -> None:
        self.type = type
        self.step_id = step_id
        self.data = data


class Event(Slotted):
    __slots__ = ("actor", "at", "data", "hash", "seq", "step_id", "type")

    def __init__(
        self,
        seq: int,  # 1, 2, ... within the run
        type: str,  # as stored: one of EventType's values
        at: str,
        actor: str,
        step_id: str | None,
        data: Mapping[str, Any],
        hash: str | None = None,  # its link in the run's chain (store/chain.py)
    ) -> None:
        self.seq = seq
        self.type = type
        self.at = at
        self.actor = actor
        self.step_id = step_id
        self.data = data
        self.hash = hash

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seq": self.seq, "type": self.type, "at": self.at, "actor": self.actor}
        if self.step_id is not None:
            out["stepId"] = self.step_id
        out.update(self.data)
        return out


class RunUpdate(Slotted):
    """What one accepted write changes; None leaves a field as it is."""

    __slots__ = ("accepted", "context", "gate", "position", "source_hash", "status", "workflow_version")

    def __init__(
        self,
        status: RunStatus | None = None,
        context: Mapping[str, Any] | None = None,
        position: Mapping[str, Any] | None = None,
        accepted: int | None = None,
        workflow_version: str | None = None,  # a migration moves the run to another version
        source_hash: str | None = None,
        gate: str | None = None,  # the new step's gate digest (runs/gate_digest.py)
    ) -> None:
        self.status = status
        self.context = context
        self.position = position
        self.accepted = accepted
        self.workflow_version = workflow_version
        self.source_hash = source_hash
        self.gate = gate
