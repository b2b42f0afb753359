"""The store interface; the records that cross it are the kernel's (model/runs.py).

A run is one row (its current position, updated in place) plus an append-only
event log. Every write goes through `update` with the version the writer read:
the store applies it only if the run is still at that version (compare-and-set),
so two writers racing on one run cannot both move it.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, Unpack

from handrail.model.runs import (
    Event,
    NewEvent,
    RunRecord,
    RunUpdate,
)
from handrail.model.slotted import Slotted

if TYPE_CHECKING:  # only the servers' stores use them: a gate hook loads neither
    from handrail.store.passkeys import Passkey
    from handrail.store.sessions import KeptSession


LOCAL_OWNER = "local"  # the one person of a server without per-person tokens


class Conflict(Exception):
    """The run moved since it was read: its version is no longer the one expected."""


STUCK_PART = 100_000  # a stuck run's notifications sort after those of the write that left it idle


class NewNotification(Slotted):
    """A webhook to send, written to the outbox with the run event that causes it: `target`
    is the receiver as configured (`slack:URL`, `teams:URL` or a plain URL), `payload` the
    plain JSON event (spec/notify.md), formatted for the target when it is sent. A write's
    notifications are delivered in the order it gives them, after those of earlier writes."""

    __slots__ = ("event", "payload", "target")

    def __init__(
        self,
        target: str,
        event: str,
        payload: Mapping[str, Any],
    ) -> None:
        self.target = target
        self.event = event
        self.payload = payload


class Notification(Slotted):
    """One outbox row: `id` is the idempotency key every delivery attempt sends."""

    __slots__ = (
        "attempts",
        "created_at",
        "delivered_at",
        "event",
        "id",
        "last_error",
        "next_at",
        "payload",
        "run_id",
        "state",
        "target",
    )

    def __init__(
        self,
        id: str,
        run_id: str,
        target: str,
        event: str,
        payload: Mapping[str, Any],
        created_at: str,
        state: str,  # pending, delivered, failed (given up)
        attempts: int,
        next_at: str,
        last_error: str | None,
        delivered_at: str | None,
    ) -> None:
        self.id = id
        self.run_id = run_id
        self.target = target
        self.event = event
        self.payload = payload
        self.created_at = created_at
        self.state = state
        self.attempts = attempts
        self.next_at = next_at
        self.last_error = last_error
        self.delivered_at = delivered_at

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "event": self.event,
            "target": self.target,
            "state": self.state,
            "attempts": self.attempts,
            "createdAt": self.created_at,
        }
        if self.state == "pending" and self.attempts:
            out["nextAttemptAt"] = self.next_at
        if self.last_error is not None:
            out["lastError"] = self.last_error
        if self.delivered_at is not None:
            out["deliveredAt"] = self.delivered_at
        return out


class Outcome(Slotted):
    """What one delivery attempt came to: delivered, or the error and when to try again
    (`retry_at` None: given up, the row is marked failed)."""

    __slots__ = ("delivered", "error", "retry_at")

    def __init__(
        self,
        delivered: bool,
        error: str | None = None,
        retry_at: str | None = None,
    ) -> None:
        self.delivered = delivered
        self.error = error
        self.retry_at = retry_at


Send = Callable[[Notification], Outcome]


class RunFilter(TypedDict, total=False):
    """Which runs `RunStore.list_runs` lists; a filter left out lets every run through."""

    workspace: str | None
    statuses: Sequence[str] | None
    owner: str | None
    limit: int  # at most; LIST_LIMIT when left out
    workflow_id: str | None
    text: str | None  # found in the goal or the run id
    parent_id: str | None  # the children of this run
    # only runs whose id sorts after this one, listed in id order: paging through all of
    # them (an id never moves, so a run updated meanwhile is neither seen twice nor missed)
    after_id: str | None


LIST_LIMIT = 100


class ClaimFilter(Slotted):
    """Which branches a claim may pick (store/claims.py): `owner`'s, narrowed by the
    parent run, the workflow and the workspace when they are given."""

    __slots__ = ("owner", "parent_id", "workflow_id", "workspace")

    def __init__(
        self,
        owner: str,
        parent_id: str | None = None,
        workflow_id: str | None = None,
        workspace: str | None = None,
    ) -> None:
        self.owner = owner
        self.parent_id = parent_id
        self.workflow_id = workflow_id
        self.workspace = workspace


def written(
    run: RunRecord,
    change: RunUpdate,
    at: str,
    events: int = 0,
    head: str | None = None,
    stats: str | None = None,
) -> RunRecord:
    """The record a successful `update` of `run` leaves in the store."""
    return run._replace(
        status=run.status if change.status is None else change.status,
        context=run.context if change.context is None else change.context,
        position=run.position if change.position is None else change.position,
        accepted=run.accepted if change.accepted is None else change.accepted,
        workflow_version=run.workflow_version if change.workflow_version is None else change.workflow_version,
        source_hash=run.source_hash if change.source_hash is None else change.source_hash,
        gate=run.gate if change.gate is None else change.gate,
        updated_at=at,
        version=run.version + 1,
        events=run.events + events,
        head=head if events else run.head,
        stats=run.stats if stats is None else stats,
    )


class RunStore(Protocol):
    """What the run layer needs from a database. Implementations: store/sqlite.py,
    store/postgres.py (a store with `replicated = True` is shared by several servers)."""

    url: str
    dialect: str  # "sqlite" or "postgresql": the SQL store/stats.py writes for it

    def put_source(self, source_hash: str, workflow_id: str, document: bytes) -> None:
        """Keep a workflow's source under its content hash (idempotent)."""

    def get_source(self, source_hash: str) -> bytes | None: ...

    def create(
        self, run: RunRecord, events: Sequence[NewEvent], notifications: Sequence[NewNotification] = ()
    ) -> RunRecord:
        """Insert a new run with its first events and the notifications they cause,
        atomically; returns it as written."""

    def get(self, run_id: str) -> RunRecord | None: ...

    def update(
        self,
        run: RunRecord,
        change: RunUpdate,
        events: Sequence[NewEvent],
        actor: str,
        notifications: Sequence[NewNotification] = (),
        durable: bool = True,
    ) -> RunRecord:
        """Apply `change`, append `events` and queue `notifications` in one transaction,
        only if the run is still at `run.version` (else `Conflict`). Returns the run as
        written (see `written`). Not `durable` (the gate's records of refusals only): the
        commit survives any process killed but may be lost, with the writes after it, to
        an OS crash or power loss; a durable commit after it makes it durable too."""

    def list_runs(self, **filters: Unpack[RunFilter]) -> list[RunRecord]:
        """Runs, most recently updated first."""

    def claim(self, where: ClaimFilter, holder: str, until: str) -> RunRecord | None:
        """Make `holder` the holder of the first free branch `where` allows, until `until`,
        with a `claimed` event, atomically (store/claims.py); None when none is free."""

    def renew(self, run_id: str, holder: str, until: str) -> bool:
        """Move the lease of `holder` on the branch to `until`, if they still hold it
        (a read of theirs renews it this way; a write carries it instead). No event,
        no new version. Returns whether it was renewed."""

    def events(self, run_id: str) -> list[Event]: ...

    def gate_events(self, run_id: str, recent: int) -> list[Event]:
        """What a gate decision reads of a run's log, in order, through indexes: its last
        `recent` events, its first, its accepted steps and its latest session bindings
        (store/gate_query.py)."""

    def shown_events(self, run_id: str, recent: int) -> list[Event]:
        """What is shown of a run's log, in order, through indexes: its accepted steps and
        its last `recent` events (store/shown_query.py); `recent` 0: its accepted steps."""

    def aggregate(self, sql: str, values: Sequence[Any]) -> list[tuple[Any, ...]]:
        """The rows of one read-only query (store/stats.py's aggregates)."""

    def idle_runs(self, before: str, limit: int) -> list[RunRecord]:
        """Open runs last written before `before` that have no stuck notification at
        their current version yet, longest idle first."""

    def notify_idle(self, run: RunRecord, notifications: Sequence[NewNotification]) -> int:
        """Queue a stuck run's notifications at its version, once: those already queued
        (by this server or another) are left alone. Returns how many were added."""

    def deliver_due(self, send: Send, limit: int) -> int:
        """Claim up to `limit` due notifications, each the oldest undelivered one of its
        run and target, `send` each and record its `Outcome`. A claim is held by one
        server at a time; returns how many were sent."""

    def notifications(self, run_id: str) -> list[Notification]:
        """A run's notifications, in the order they are delivered."""

    def passkeys(self, person: str | None = None) -> "list[Passkey]":
        """The registered passkeys, of `person` or everyone's, oldest first."""

    def add_passkey(self, key: "Passkey") -> None: ...

    def passkey_used(self, credential_id: str, sign_count: int) -> None:
        """Keep the signature counter an approval's assertion carried."""

    def remove_passkey(self, person: str, credential_id: str) -> bool: ...

    def events_since(self, at: str, limit: int) -> list[tuple[str, Event, str | None]]:
        """Up to `limit` events of every run whose time is `at` or later, oldest first,
        each as (run id, event, the hash of the event before it in its run)."""

    def keep_session(self, session_id: str, kept: "KeptSession", now: float) -> None:
        """A dashboard session, kept for every server on the store (its id hashed); the
        expired ones, and the person's beyond their newest hundred, are dropped."""

    def kept_session(self, session_id: str, now: float) -> "KeptSession | None":
        """The session, unless it has expired by `now` or was ended."""

    def end_session(self, session_id: str) -> None: ...

    def keep_challenge(self, key: str, person: str, body: str, expires: float, now: float) -> None:
        """A passkey challenge handed out under `key` (hashed), for any server on the store
        to take; the expired ones, and the person's beyond their newest twenty, are dropped."""

    def take_challenge(self, key: str, now: float) -> str | None:
        """The challenge's body, removed as it is read: one taker only, on any server."""

    def close(self) -> None: ...
