"""The store interface and the records that cross it.

A run is one row (its current position, updated in place) plus an append-only
event log. Every write goes through `update` with the version the writer read:
the store applies it only if the run is still at that version (compare-and-set),
so two writers racing on one run cannot both move it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol


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


STATUSES: tuple[RunStatus, ...] = tuple(RunStatus)
# "open" runs: resumable, listed at start-up
ACTIVE_STATUSES: tuple[RunStatus, ...] = (RunStatus.ACTIVE, RunStatus.AWAITING_APPROVAL)
LOCAL_OWNER = "local"  # the one person of a server without per-person tokens


class Conflict(Exception):
    """The run moved since it was read: its version is no longer the one expected."""


@dataclass(frozen=True, slots=True)
class RunRecord:
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

    @property
    def current_step(self) -> dict[str, Any] | None:
        step = self.position.get("step")
        return {"id": step["id"], "title": step["title"]} if isinstance(step, dict) else None


@dataclass(frozen=True, slots=True)
class NewEvent:
    type: EventType
    step_id: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)  # output, issues, contextChanges, reason ...


@dataclass(frozen=True, slots=True)
class Event:
    seq: int  # 1, 2, ... within the run
    type: str  # as stored: one of EventType's values
    at: str
    actor: str
    step_id: str | None
    data: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seq": self.seq, "type": self.type, "at": self.at, "actor": self.actor}
        if self.step_id is not None:
            out["stepId"] = self.step_id
        out.update(self.data)
        return out


@dataclass(frozen=True, slots=True)
class RunUpdate:
    """What one accepted write changes; None leaves a field as it is."""

    status: RunStatus | None = None
    context: Mapping[str, Any] | None = None
    position: Mapping[str, Any] | None = None
    accepted: int | None = None


def written(run: RunRecord, change: RunUpdate, at: str, events: int = 0) -> RunRecord:
    """The record a successful `update` of `run` leaves in the store."""
    return replace(
        run,
        status=run.status if change.status is None else change.status,
        context=run.context if change.context is None else change.context,
        position=run.position if change.position is None else change.position,
        accepted=run.accepted if change.accepted is None else change.accepted,
        updated_at=at,
        version=run.version + 1,
        events=run.events + events,
    )


class RunStore(Protocol):
    """What the run layer needs from a database. Implementations: store/sqlite.py,
    store/postgres.py (a store with `replicated = True` is shared by several servers)."""

    url: str

    def put_source(self, source_hash: str, workflow_id: str, document: bytes) -> None:
        """Keep a workflow's source under its content hash (idempotent)."""

    def get_source(self, source_hash: str) -> bytes | None: ...

    def create(self, run: RunRecord, events: Sequence[NewEvent]) -> RunRecord:
        """Insert a new run with its first events, atomically; returns it as written."""

    def get(self, run_id: str) -> RunRecord | None: ...

    def update(self, run: RunRecord, change: RunUpdate, events: Sequence[NewEvent], actor: str) -> RunRecord:
        """Apply `change` and append `events` in one transaction, only if the run is still
        at `run.version` (else `Conflict`). Returns the run as written (see `written`)."""

    def list_runs(
        self,
        *,
        workspace: str | None = None,
        statuses: Sequence[str] | None = None,
        owner: str | None = None,
        limit: int = 100,
        workflow_id: str | None = None,
        text: str | None = None,
    ) -> list[RunRecord]:
        """Runs, most recently updated first; `text`: found in the goal or the run id."""

    def events(self, run_id: str) -> list[Event]: ...

    def close(self) -> None: ...
