"""What a long-lived store (a `handrail serve`) keeps of each run's gate reading
between hooks, so that a hook reads only the events written since the last one
instead of the run's last `recent` events again, and decodes only those.

A run's events are only ever appended (seq 1, 2, ...; a row is never rewritten but
for its chain hash, which the gate does not read), so the window of a later moment is
the earlier window plus the newer events, cut by the same rules as the query of
store/gate_query.py: the last `recent`, the first, every accepted step, the latest
`BINDINGS_READ` bindings. The newer events are read from the last one kept, which must
still be there as kept; when it is not (the database file was replaced) or when more
than `recent` were written since, the whole query is read again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from handrail.internals import Lock  # threading's, without loading threading
from handrail.model.runs import Event
from handrail.store.gate_query import BINDINGS_READ
from handrail.store.rows import read_events

RUNS_KEPT = 256  # open runs a server's hooks touch; the least recently read goes first
BIND_MARK = b'"bind":true'  # the partial index's LIKE term (ASCII case folded, as SQLite's LIKE)

NEWER_QUERY = (
    "SELECT seq, type, at, actor, step_id, data, hash FROM run_events "
    "WHERE run_id = ? AND seq >= ? ORDER BY seq LIMIT ?"
)

Kept = list[tuple[Event, bool]]  # the window's events, each with whether it is a binding


def binds(kind: str, text: str) -> bool:
    """Whether a stored event is one the bindings' index holds (store/schema.py)."""
    return kind == "gate" and BIND_MARK in text.encode().lower()


class GateWindows:
    """The last window read of each run, by (run, recent)."""

    def __init__(self, runs: int = RUNS_KEPT) -> None:
        self._runs = runs
        self._kept: OrderedDict[tuple[str, int], Kept] = OrderedDict()
        self._lock = Lock()  # the HTTP worker threads share the store

    def last(self, run_id: str, recent: int) -> Event | None:
        """The newest event of the run's kept window, None when none is kept."""
        with self._lock:
            kept = self._kept.get((run_id, recent))
            return kept[-1][0] if kept else None

    def extend(self, run_id: str, recent: int, rows: Sequence[Sequence[Any]]) -> list[Event] | None:
        """The window with `rows` (NEWER_QUERY's, from the kept newest event on) added
        and cut; None when they do not continue it: the caller reads the whole query."""
        with self._lock:
            kept = self._kept.get((run_id, recent))
        if not kept or not rows:
            return None
        newest = kept[-1][0]
        seq, kind, at = rows[0][0], rows[0][1], rows[0][2]
        if (int(seq), kind, at) != (newest.seq, newest.type, newest.at) or len(rows) > recent:
            return None
        added = read_events(rows[1:])
        merged = kept + [(event, binds(row[1], row[5])) for event, row in zip(added, rows[1:], strict=True)]
        return self._keep(run_id, recent, merged)

    def put(self, run_id: str, recent: int, rows: Sequence[Sequence[Any]], events: list[Event]) -> None:
        """The whole query's result (`events`, read from `rows` in the same order)."""
        self._keep(run_id, recent, [(e, binds(row[1], row[5])) for e, row in zip(events, rows, strict=True)])

    def _keep(self, run_id: str, recent: int, merged: Kept) -> list[Event]:
        if not merged:
            return []
        top = merged[-1][0].seq
        bound = {event.seq for event, bind in merged if bind}
        latest = set(sorted(bound)[-BINDINGS_READ:])
        window = [
            (event, bind)
            for event, bind in merged
            if event.seq > top - recent or event.seq == 1 or event.type == "accepted" or event.seq in latest
        ]
        with self._lock:
            key = (run_id, recent)
            current = self._kept.get(key)
            if not current or current[-1][0].seq <= top:  # a slower reader's older window never wins
                self._kept[key] = window
                self._kept.move_to_end(key)
                while len(self._kept) > self._runs:
                    self._kept.popitem(last=False)
        return [event for event, _ in window]
