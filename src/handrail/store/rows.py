"""What the SQLite and PostgreSQL stores share: how values are stored (times as ISO
text, JSON as text) and read back into records, and the parts of their SQL built
once: the values of a new run row, the SET list of an update, the WHERE of a
listing. `mark` is the driver's placeholder (`?` for sqlite3, `%s` for psycopg)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from handrail.model.codec import decode_stored, encode_stored
from handrail.model.runs import Event, NewEvent, RunRecord, RunStatus, RunUpdate
from handrail.store import state_seal
from handrail.store.base import RunFilter, written
from handrail.store.chain import EVENT_COLUMNS, EventRow, chained_rows, new_head

if TYPE_CHECKING:  # a write plans the statistics' summary; a hook's read loads none of it
    from handrail.store.summary import Summary

    # an update worked out before it is written: its time, the log rows it appends, the
    # log's new head, the runs row's `SET ...` with its values, and the statistics'
    # summary of the rows (store/summary.py) with the run's new `stats`. A tuple, not a
    # NamedTuple: a hook's read loads this module, and typing would compile the field
    # annotations that name the summary it does not load
    Move = tuple[str, list[EventRow], str | None, str, list[Any], Summary | None, str | None]


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def later(seconds: float) -> str:
    """`now()` moved by `seconds` (negative: earlier), in the same form, so times compare as text."""
    at = datetime.now(UTC) + timedelta(seconds=seconds)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


RUN_COLUMNS = (
    "id, owner, workspace, workflow_id, workflow_version, source_hash, goal, status, "
    "context, position, accepted, created_at, updated_at, version, events, head, stats, "
    "parent_id, parent_step, branch, holder, lease_until, gate, seal"
)


def run_record(row: Sequence[Any]) -> RunRecord:
    """A runs row, checked against its seal; `RUN_COLUMNS` lists RunRecord's fields in their order."""
    values = list(row[:24])
    values[7:10] = RunStatus(row[7]), decode_stored(row[8]), decode_stored(row[9])
    run = RunRecord(*values)
    stored = state_seal.stored_fields(run, row[8], row[9])
    problems = state_seal.differs(run, run.seal, state_seal.stored_digests(stored))
    return run._replace(tampered=tuple(problems)) if problems else run


def sealed(run: RunRecord, head: str | None, events: int) -> str:
    """The `seal` of `run` written at `head` after `events`: its fields digested as the row
    will read them back."""
    stored = state_seal.stored_fields(run, encode_stored(run.context), encode_stored(run.position))
    return state_seal.seal(state_seal.stored_digests(stored), head, events)


def run_row(run: RunRecord, events: int, head: str | None, stats: str | None = None) -> tuple[Any, ...]:
    """A new run's values, in the order of `RUN_COLUMNS`."""
    return (
        run.id,
        run.owner,
        run.workspace,
        run.workflow_id,
        run.workflow_version,
        run.source_hash,
        run.goal,
        str(run.status),  # the plain value: a driver may store an enum by its name
        encode_stored(run.context),
        encode_stored(run.position),
        run.accepted,
        run.created_at,
        run.updated_at,
        run.version,
        events,
        head,
        stats,
        run.parent_id,
        run.parent_step,
        run.branch,
        run.holder,
        run.lease_until,
        run.gate,
        sealed(run, head, events),
    )


def insert_run(
    run: RunRecord, events: int, head: str | None, mark: str, stats: str | None = None
) -> tuple[str, tuple[Any, ...]]:
    """The statement that inserts a new run row, and its values."""
    return f"INSERT INTO runs ({RUN_COLUMNS}) VALUES ({', '.join([mark] * 24)})", run_row(
        run, events, head, stats
    )


def insert_events(db: Any, rows: Sequence[EventRow], mark: str) -> None:
    """Write event rows in one statement on `db` (a sqlite3 or psycopg connection)."""
    if not rows:
        return
    one = f"({', '.join([mark] * 8)})"
    db.execute(
        f"INSERT INTO run_events ({EVENT_COLUMNS}) VALUES {', '.join(one for _ in rows)}",
        [v for r in rows for v in r.values()],
    )


def read_events(found: Sequence[Sequence[Any]]) -> list[Event]:
    """Events from rows of `EVENTS_QUERY`."""
    return [
        Event(seq, kind, at, actor, step, decode_stored(data), link)
        for seq, kind, at, actor, step, data, link in found
    ]


EVENTS_QUERY = (
    "SELECT seq, type, at, actor, step_id, data, hash FROM run_events WHERE run_id = {mark} ORDER BY seq"
)

# every run's events from a time on, oldest first, each with the hash of the event before
# it in its run (its chain link): `handrail audit` and `serve --audit-log` (runs/audit.py)
EVENTS_SINCE_QUERY = (
    "SELECT e.run_id, e.seq, e.type, e.at, e.actor, e.step_id, e.data, e.hash, p.hash "
    "FROM run_events e LEFT JOIN run_events p ON p.run_id = e.run_id AND p.seq = e.seq - 1 "
    "WHERE e.at >= {mark} ORDER BY e.at, e.run_id, e.seq LIMIT {mark}"
)


def read_linked(found: Sequence[Sequence[Any]]) -> list[tuple[str, Event, str | None]]:
    """(run id, event, the hash before it) from rows of `EVENTS_SINCE_QUERY`."""
    return [
        (run_id, Event(seq, kind, at, actor, step, decode_stored(data), link), prev)
        for run_id, seq, kind, at, actor, step, data, link, prev in found
    ]


def move(run: RunRecord, change: RunUpdate, events: Sequence[NewEvent], actor: str, mark: str) -> Move:
    """The write is applied only if the run is still at `run.version`: that makes
    `run.events`, `run.head` and `run.stats` the log's as committed."""
    at = now()
    after = written(run, change, at, len(events))
    rows = chained_rows(run.id, run.events, run.head, events, actor, at)
    head = new_head(rows, run.head)
    from handrail.store.summary import plan  # lazy: a hook's read writes no statistics

    summary, stats = plan(run.stats, rows)
    sets, values = update_sets(change, at, len(events), mark, head, stats)
    sets += f", seal = {mark}"
    values.append(sealed(after, head, run.events + len(events)))
    if run.holder is not None:  # a held branch: its lease as the holder's call renewed it
        sets += f", lease_until = {mark}"
        values.append(run.lease_until)
    return at, rows, head, sets, values, summary, stats


def update_sets(
    change: RunUpdate, at: str, events: int, mark: str, head: str | None = None, stats: str | None = None
) -> tuple[str, list[Any]]:
    """`SET ...` of an accepted write (version bumped, events counted, the chain's new
    head, the statistics' marks) and its values."""
    sets = [f"updated_at = {mark}", "version = version + 1", f"events = events + {mark}"]
    values: list[Any] = [at, events]
    if events:
        sets.append(f"head = {mark}")
        values.append(head)
    for column, value in (
        ("status", None if change.status is None else str(change.status)),
        ("context", None if change.context is None else encode_stored(change.context)),
        ("position", None if change.position is None else encode_stored(change.position)),
        ("accepted", change.accepted),
        ("workflow_version", change.workflow_version),
        ("source_hash", change.source_hash),
        ("gate", change.gate),
        ("stats", stats),
    ):
        if value is not None:
            sets.append(f"{column} = {mark}")
            values.append(value)
    return ", ".join(sets), values


def list_filter(filters: RunFilter, mark: str) -> tuple[str, list[Any]]:
    """`WHERE ...` (or nothing) of a listing, and its values. `text` is found in the
    goal or the run id, ignoring the case of ASCII letters; `%` and `_` in it are literal."""
    workspace, statuses, owner = filters.get("workspace"), filters.get("statuses"), filters.get("owner")
    workflow_id, text = filters.get("workflow_id"), filters.get("text")
    where: list[str] = []
    values: list[Any] = []
    if workspace is not None:
        where.append(f"workspace = {mark}")
        values.append(workspace)
    if statuses:
        where.append(f"status IN ({', '.join(mark for _ in statuses)})")
        values.extend(str(s) for s in statuses)
    if owner is not None:
        where.append(f"owner = {mark}")
        values.append(owner)
    if workflow_id is not None:
        where.append(f"workflow_id = {mark}")
        values.append(workflow_id)
    if (parent_id := filters.get("parent_id")) is not None:
        where.append(f"parent_id = {mark}")
        values.append(parent_id)
    after_id = filters.get("after_id")
    if after_id is not None:
        where.append(f"id > {mark}")
        values.append(after_id)
    if text:
        pattern = "%" + _ascii_lower(text).replace("!", "!!").replace("%", "!%").replace("_", "!_") + "%"
        where.append(f"(LOWER(goal) LIKE {mark} ESCAPE '!' OR LOWER(id) LIKE {mark} ESCAPE '!')")
        values.extend([pattern, pattern])
    return (f"WHERE {' AND '.join(where)}" if where else ""), values


def list_order(filters: RunFilter, newest: str) -> str:
    """A listing's ORDER BY: by id when it pages (`after_id`), else `newest` first."""
    return "ORDER BY id" if filters.get("after_id") is not None else f"ORDER BY {newest}"


def _ascii_lower(text: str) -> str:
    """SQLite's LOWER folds ASCII letters only: fold the pattern the same way in both stores."""
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def seal_backfill(db: Any, mark: str) -> int:
    """Seal the rows of runs kept before the seal existed, as they stand, inside the
    caller's migration transaction (only there: a seal taken away later stays missing)."""
    rows = db.execute(f"SELECT {RUN_COLUMNS} FROM runs WHERE seal IS NULL").fetchall()
    for row in rows:
        run = run_record(row)
        seal = sealed(run, run.head, run.events)
        db.execute(f"UPDATE runs SET seal = {mark} WHERE id = {mark}", (seal, run.id))
    return len(rows)
