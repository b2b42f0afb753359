"""The hash chain over a run's events (spec/record.md).

Each event row keeps the SHA-256 of its canonical form, which includes the hash of
the event before it; the run row keeps the last hash (its head) and the count. An
edit to any event's row changes its hash, so the chain recomputed from the first
event stops matching at the event edited; a deleted last event leaves the head and
the count on the run row pointing past the log's end. Someone who can rewrite the
whole log and the run row alike can recompute every hash: only a signed export
(`runs/record.py`) kept elsewhere proves what the log held then.
"""

from collections.abc import Sequence
from typing import Any, NamedTuple

from handrail.model.codec import decode_stored, encode_stored
from handrail.model.slotted import Slotted
from handrail.store.chain_form import event_hash, hashed_form


class EventRow(NamedTuple):  # a hook writes these: NamedTuples load no dataclasses
    """One row of `run_events` as written: its columns in the table's order."""

    run_id: str
    seq: int
    type: str
    at: str
    actor: str
    step_id: str | None
    data: str  # the stored JSON text
    hash: str

    def values(self) -> tuple[Any, ...]:
        return (self.run_id, self.seq, self.type, self.at, self.actor, self.step_id, self.data, self.hash)


EVENT_COLUMNS = "run_id, seq, type, at, actor, step_id, data, hash"


def chained_rows(
    run_id: str,
    last: int,
    head: str | None,
    events: Sequence[Any],
    actor: str,
    at: str,
) -> list[EventRow]:
    """`events` (NewEvents) as rows numbered on from `last`, chained on from `head`.
    Each hash is taken over the data as the store will read it back, so that the hash
    recomputed from a read matches whatever the stored text's encoding was."""
    rows: list[EventRow] = []
    prev = head
    for i, e in enumerate(events, 1):
        text = encode_stored(e.data)
        kind = str(e.type)  # the plain value: a driver may store an enum by its name
        form = hashed_form(run_id, last + i, kind, at, actor, e.step_id, decode_stored(text), prev)
        prev = event_hash(form)
        rows.append(EventRow(run_id, last + i, kind, at, actor, e.step_id, text, prev))
    return rows


def new_head(rows: Sequence[EventRow], head: str | None) -> str | None:
    return rows[-1].hash if rows else head


class Break(Slotted):
    """The first place a run's chain does not hold: the event (its seq; 0 for the run
    row itself) and what differs, in words."""

    __slots__ = ("problem", "run_id", "seq")

    def __init__(
        self,
        run_id: str,
        seq: int,
        problem: str,
    ) -> None:
        self.run_id = run_id
        self.seq = seq
        self.problem = problem

    def as_dict(self) -> dict[str, Any]:
        return {"runId": self.run_id, "seq": self.seq, "problem": self.problem}


def first_break(run_id: str, events: Sequence[Any], head: str | None, count: int | None) -> Break | None:
    """Recompute the chain of `events` (Events, in the order read) and compare it with
    the stored hashes, then the last hash and the number of events with the run row's
    `head` and `count` (None: not compared). None when everything matches."""
    prev: str | None = None
    for expected, e in enumerate(events, 1):
        if e.seq != expected:
            missing = "missing" if e.seq > expected else "out of order"
            said = f"event {expected} is {missing}: the log goes on with event {e.seq}"
            return Break(run_id, expected, said)
        if not e.hash:
            return Break(run_id, e.seq, f"event {e.seq} ({e.type}) has no hash")
        again = event_hash(hashed_form(run_id, e.seq, e.type, e.at, e.actor, e.step_id, e.data, prev))
        if again != e.hash:
            return Break(
                run_id,
                e.seq,
                f"event {e.seq} ({e.type}) does not match its hash: stored {e.hash[:16]}..., "
                f"recomputed from its content and the event before it {again[:16]}...",
            )
        prev = e.hash
    if count is not None and count != len(events):
        seq = len(events) + 1 if count > len(events) else count + 1
        return Break(
            run_id,
            seq,
            f"the run records {count} events but its log holds {len(events)}"
            + (f": event {seq} and after are missing" if count > len(events) else ""),
        )
    if head is not None and head != prev:
        return Break(
            run_id,
            len(events),
            f"the run's head hash {head[:16]}... is not the hash of its last event "
            f"{len(events)} ({(prev or 'none')[:16]}...)",
        )
    if head is None and events and count is not None:
        return Break(run_id, 0, "the run row keeps no head hash")
    return None


def backfill(db: Any, mark: str) -> int:
    """Chain the events of runs written before the chain existed (their run row has no
    head), run by run, inside the caller's migration transaction; how many runs. `db`
    is a sqlite3 or psycopg connection (both have `execute`), `mark` its placeholder."""
    ids = [row[0] for row in db.execute("SELECT id FROM runs WHERE head IS NULL AND events > 0").fetchall()]
    for run_id in ids:
        rows = db.execute(
            f"SELECT seq, type, at, actor, step_id, data FROM run_events WHERE run_id = {mark} ORDER BY seq",
            (run_id,),
        ).fetchall()
        prev: str | None = None
        for seq, kind, at, actor, step_id, data in rows:
            prev = event_hash(hashed_form(run_id, seq, kind, at, actor, step_id, decode_stored(data), prev))
            db.execute(
                f"UPDATE run_events SET hash = {mark} WHERE run_id = {mark} AND seq = {mark}",
                (prev, run_id, seq),
            )
        db.execute(f"UPDATE runs SET head = {mark} WHERE id = {mark}", (prev, run_id))
    return len(ids)


def check_run(store: Any, run_id: str, run: Any = None, events: Sequence[Any] | None = None) -> Break | None:
    """`first_break` of a run in `store` (a RunStore), its row and log read again (a few
    times at most) while their counts differ: a write between reading the row and the
    log appends events the row read does not count yet."""
    for _ in range(3):
        if run is not None and events is not None and len(events) == run.events:
            break
        run = store.get(run_id)
        if run is None:
            return Break(run_id, 0, "the run is gone")
        events = store.events(run_id)
    broken = first_break(run_id, events or [], run.head, run.events)
    if broken is None and run.tampered:  # the chain holds, the row does not match its seal
        return Break(run_id, 0, "the run row is not as its last write sealed it: " + "; ".join(run.tampered))
    return broken
