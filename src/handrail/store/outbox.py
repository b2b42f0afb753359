"""The notification outbox's SQL, shared by the SQLite and PostgreSQL stores: the rows a
write queues, which rows are due (the oldest undelivered of each run and target, so a
run's notifications reach a receiver in order), and what an attempt records.
`mark` is the driver's placeholder (`?` for sqlite3, `%s` for psycopg)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing
from typing import Any

from handrail.model.codec import decode_stored, encode_stored
from handrail.model.runs import ACTIVE_STATUSES
from handrail.store.base import STUCK_PART, NewNotification, Notification, Outcome

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"

_COLUMNS = (
    "n.id, n.run_id, n.target, n.event, n.payload, n.created_at, n.state, n.attempts, n.next_at, "
    "n.last_error, n.delivered_at"
)
INSERT = (
    "INSERT INTO notifications (id, run_id, run_version, part, target, event, payload, created_at, "
    "state, attempts, next_at) VALUES ({marks}) ON CONFLICT DO NOTHING"
)


def new_id() -> str:
    import secrets  # lazy: a gate hook, which queues no notification, never loads it

    return "ntf_" + secrets.token_hex(16)


def insert(mark: str) -> str:
    return INSERT.format(marks=", ".join([mark] * 11))


def rows(
    run_id: str, version: int, notifications: Sequence[NewNotification], at: str, first: int = 0
) -> list[tuple[Any, ...]]:
    """The values of `notifications` queued by the write that leaves the run at `version`,
    numbered from `first` in the order given."""
    return [
        (new_id(), run_id, version, part, n.target, n.event, encode_stored(n.payload), at, PENDING, 0, at)
        for part, n in enumerate(notifications, first)
    ]


def queue(
    db: Any, run_id: str, version: int, notifications: Sequence[NewNotification], at: str, mark: str
) -> None:
    """Write the rows of `notifications` on `db` (a sqlite3 or psycopg connection), in the
    transaction of the write that leaves the run at `version`."""
    with closing(db.cursor()) as cursor:  # psycopg runs executemany on a cursor only
        cursor.executemany(insert(mark), rows(run_id, version, notifications, at))


def due(mark: str) -> str:
    """Due rows that are the first undelivered one of their run and target (an earlier row
    still pending, even one another server holds, keeps the later ones waiting)."""
    return (
        f"SELECT {_COLUMNS} FROM notifications n WHERE n.state = '{PENDING}' AND n.next_at <= {mark} "
        "AND NOT EXISTS (SELECT 1 FROM notifications e WHERE e.run_id = n.run_id "
        f"AND e.target = n.target AND e.state = '{PENDING}' AND (e.run_version < n.run_version "
        "OR (e.run_version = n.run_version AND e.part < n.part))) "
    )


def record(mark: str) -> str:
    """An attempt's outcome, for a row still pending (another server may have finished it)."""
    return (
        f"UPDATE notifications SET state = {mark}, attempts = attempts + 1, next_at = {mark}, "
        f"last_error = {mark}, delivered_at = {mark}, claimed_until = NULL "
        f"WHERE id = {mark} AND state = '{PENDING}'"
    )


def recorded(n: Notification, outcome: Outcome, at: str) -> tuple[Any, ...]:
    """The values of `record` for `outcome`."""
    if outcome.delivered:
        return (DELIVERED, at, None, at, n.id)
    state = PENDING if outcome.retry_at is not None else FAILED
    return (state, outcome.retry_at or at, (outcome.error or "")[:500], None, n.id)


def idle(mark: str) -> str:
    """Open runs idle since before a time, without a stuck notification at their version."""
    statuses = ", ".join(f"'{s}'" for s in ACTIVE_STATUSES)
    return (
        f"SELECT {{columns}} FROM runs WHERE status IN ({statuses}) AND updated_at < {mark} "
        "AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.run_id = runs.id "
        f"AND n.run_version = runs.version AND n.part = {STUCK_PART}) "
        f"ORDER BY updated_at LIMIT {mark}"
    )


def listing(mark: str) -> str:
    return (
        f"SELECT {_COLUMNS} FROM notifications n WHERE n.run_id = {mark} "
        "ORDER BY n.run_version, n.part, n.target"
    )


def notification(row: Sequence[Any]) -> Notification:
    """An outbox row; `_COLUMNS` lists Notification's fields in their order."""
    values = list(row[:11])
    values[4] = decode_stored(values[4])
    return Notification(*values)
