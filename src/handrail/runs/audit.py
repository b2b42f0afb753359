"""The audit trail: one JSON line per run event, for a log shipper to send on (`handrail
audit`, `serve --audit-log FILE`; fields in docs/team.md, "Audit trail"). A line names
who did what, in which run and step, through which channel, and carries the event's
link in the store's hash chain (`prev`, `hash`), so `verify` can hold a file against
the store: a line changed, added or dropped is named."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from handrail.model.runs import Event
from handrail.store.base import RunStore
from handrail.store.chain_form import canonical

log = logging.getLogger(__name__)
BATCH = 1000
OVERLAP_S = 30  # a writer's event may commit a little after a later-stamped one: read back this far


def line(run_id: str, event: Event, prev: str | None) -> bytes:
    """One event as its audit line: canonical JSON (spec/record.md, section 1) and a newline."""
    data: Mapping[str, Any] = event.data
    person = data.get("person")
    via = data.get("via")
    return (
        canonical(
            {
                "at": event.at,
                "runId": run_id,
                "seq": event.seq,
                "event": str(event.type),
                "actor": event.actor,
                "person": person if isinstance(person, str) else None,
                "stepId": event.step_id,
                "via": via if isinstance(via, str) else None,
                "prev": prev,
                "hash": event.hash,
            }
        )
        + b"\n"
    )


def since(store: RunStore, at: str) -> Iterator[bytes]:
    """Every event's line from `at` on, oldest first, read in batches."""
    seen: set[tuple[str, int]] = set()
    while True:
        found = store.events_since(at, BATCH)
        fresh = [(r, e, p) for r, e, p in found if (r, e.seq) not in seen]
        for run_id, event, prev in fresh:
            seen.add((run_id, event.seq))
            yield line(run_id, event, prev)
        if len(found) < BATCH or not fresh:
            return
        at = found[-1][1].at  # the next batch starts at the last time read; `seen` drops repeats


def verify(store: RunStore, lines: Iterable[bytes]) -> str | None:
    """The first line the store does not bear out, in words (None: every line holds):
    each must be exactly the line of the stored event it names, and the lines of one run
    follow each other in its chain, none left out between them."""
    events: dict[str, dict[int, tuple[Event, str | None]]] = {}
    last: dict[str, tuple[int, str | None]] = {}
    for number, text in enumerate(lines, 1):
        try:
            said = json.loads(text)
            run_id, seq = str(said["runId"]), int(said["seq"])
        except (ValueError, KeyError, TypeError):
            return f"line {number}: not an audit line"
        if run_id not in events:
            chain: dict[int, tuple[Event, str | None]] = {}
            prev = None
            for event in store.events(run_id):
                chain[event.seq] = (event, prev)
                prev = event.hash
            events[run_id] = chain
        stored = events[run_id].get(seq)
        if stored is None:
            return f"line {number}: run {run_id} has no event {seq} in the store"
        if line(run_id, *stored) != text:
            return f"line {number}: it is not what the store holds for event {seq} of run {run_id}"
        before = last.get(run_id)
        if before is not None and (before[0] + 1 != seq or before[1] != said["prev"]):
            return f"line {number}: run {run_id}'s lines skip from event {before[0]} to {seq}"
        last[run_id] = (seq, said["hash"])
    return None


class AuditLog:
    """`serve --audit-log FILE`: the lines of the store's new events appended to FILE as
    they are written (read every `interval` seconds, by every server on the store)."""

    def __init__(self, store: RunStore, path: Path, start: str, interval: float = 1.0) -> None:
        self.store, self.path, self.interval = store, path, interval
        self.at = start
        self.written: dict[tuple[str, int], str] = {}  # recent lines' keys, by time, to skip repeats
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="handrail-audit-log", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.once()  # what was written meanwhile

    def once(self) -> int:
        """Append the lines not written yet; how many."""
        found = self.store.events_since(self.at, BATCH)
        fresh = [(r, e, p) for r, e, p in found if (r, e.seq) not in self.written]
        if fresh:
            with self.path.open("ab") as out:
                for run_id, event, prev in fresh:
                    out.write(line(run_id, event, prev))
                out.flush()
        for run_id, event, _ in fresh:
            self.written[(run_id, event.seq)] = event.at
        if found:
            newest = max(e.at for _, e, _ in found)
            self.at = min(newest, _earlier(newest, OVERLAP_S)) if len(found) < BATCH else newest
            self.written = {k: v for k, v in self.written.items() if v >= self.at}
        return len(fresh)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.once()
            except Exception:  # a database outage: tried again on the next round
                log.warning("audit log: the store could not be read; trying again", exc_info=True)


def _earlier(at: str, seconds: int) -> str:
    """`at` moved `seconds` back, in the store's form (store/rows.py `now`)."""
    from datetime import datetime, timedelta  # lazy: only a server with --audit-log

    moment = datetime.fromisoformat(at.replace("Z", "+00:00")) - timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
