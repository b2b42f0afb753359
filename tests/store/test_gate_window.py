"""A SQLite store read by a server's hooks keeps each run's gate window: a later read
decodes only the events written since, and finds what the whole query finds."""

from __future__ import annotations

import random
from pathlib import Path

from handrail.model.runs import Event, EventType, NewEvent, RunUpdate
from handrail.store import RunStore, open_store
from handrail.store.gate_query import BINDINGS_READ
from handrail.store.gate_window import GateWindows
from handrail.store.urls import sqlite_url
from tests.store.test_store import record

RECENT = 20


def tool(note: str = "") -> NewEvent:
    return NewEvent(EventType.GATE, "s1", {"event": "after-tool", "decision": "record", "note": note})


def bind(session: str) -> NewEvent:
    return NewEvent(
        EventType.GATE, "s1", {"event": "session", "decision": "context", "session": session, "bind": True}
    )


def started(store: RunStore) -> None:
    store.put_source("h1", "wf", b'{"id": "wf"}')
    store.create(record("r1"), [NewEvent(EventType.STARTED, None, {"workflowFolders": ["/w"]})])


def append(store: RunStore, events: list[NewEvent]) -> None:
    run = store.get("r1")
    assert run is not None
    store.update(run, RunUpdate(), events, "gate")


def whole_query(path: Path) -> list[tuple[int, str, dict[str, object]]]:
    """What a store that never read the run before finds (a hook's own store)."""
    fresh = open_store(sqlite_url(path), reading=True)
    try:
        return [(e.seq, e.type, dict(e.data)) for e in fresh.gate_events("r1", RECENT)]
    finally:
        fresh.close()


def test_a_second_gate_read_decodes_only_the_events_written_since_the_first(tmp_path: Path) -> None:
    store = open_store(sqlite_url(tmp_path / "r.db"))
    started(store)
    append(store, [tool()] * 50)
    first = store.gate_events("r1", RECENT)

    append(store, [tool("new")])
    second = store.gate_events("r1", RECENT)
    store.close()

    assert [e.seq for e in second] == [1, *range(33, 53)]
    kept = {e.seq: e for e in first}
    assert all(e is kept[e.seq] for e in second[:-1])  # the same objects: not read nor decoded again
    assert second[-1].data["note"] == "new"


def test_a_kept_window_finds_what_the_whole_query_finds_after_every_kind_of_write(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    store = open_store(sqlite_url(path))
    started(store)
    draw = random.Random(26)
    kinds = [
        lambda n: tool(),
        lambda n: tool('"bind":true'),  # the words in a string: no binding, for the index nor here
        lambda n: bind(f"s-{n}"),
        lambda n: NewEvent(EventType.ACCEPTED, "s1", {}),
    ]
    for n in range(120):
        batch = [draw.choice(kinds)(n) for _ in range(draw.choice((1, 1, 2, 5, RECENT + 3)))]
        append(store, batch)
        read = [(e.seq, e.type, dict(e.data)) for e in store.gate_events("r1", RECENT)]
        assert read == whole_query(path), f"after write {n}"
    binds = [e for e in store.gate_events("r1", RECENT) if e.data.get("bind") is True]
    store.close()
    assert len(binds) == BINDINGS_READ


def test_rows_that_do_not_continue_the_kept_window_are_not_taken_for_it() -> None:
    windows = GateWindows()
    rows = [(seq, "gate", f"t{seq}", "gate", "s1", '{"n":1}', None) for seq in (1, 2, 3)]
    windows.put("r1", RECENT, rows, [store_event(row) for row in rows])

    rewritten = [
        (3, "gate", "another time", "gate", "s1", '{"n":1}', None),
        (4, "gate", "t4", "gate", "s1", "{}", None),
    ]
    gap = [(4, "gate", "t4", "gate", "s1", "{}", None)]
    too_many = [rows[-1], *[(seq, "gate", "t", "gate", "s1", "{}", None) for seq in range(4, 4 + RECENT + 1)]]

    assert windows.extend("r1", RECENT, rewritten) is None
    assert windows.extend("r1", RECENT, gap) is None
    assert windows.extend("r1", RECENT, too_many) is None
    assert [e.seq for e in windows.extend("r1", RECENT, [rows[-1], *gap]) or []] == [1, 2, 3, 4]


def store_event(row: tuple[object, ...]) -> Event:
    seq, kind, at, actor, step, _, link = row
    return Event(
        int(str(seq)),
        str(kind),
        str(at),
        str(actor),
        str(step),
        {"n": 1},
        None if link is None else str(link),
    )
