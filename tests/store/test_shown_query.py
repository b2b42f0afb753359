"""What is shown of a run's log (`handrail runs show`, workflow_resume's recap), on every
store: its accepted steps and its last events, in order, however long the log, found
through indexes only."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.model.runs import EventType, NewEvent, RunUpdate
from handrail.store import RunStore, open_store
from handrail.store.shown_query import shown_events_query, shown_events_values
from handrail.store.urls import sqlite_url
from tests.store.test_store import record

pytestmark = pytest.mark.slow

TOOL = NewEvent(EventType.GATE, "s1", {"event": "after-tool", "decision": "record"})


@pytest.fixture(params=("postgresql", "sqlite"))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunStore]:
    url = (
        request.getfixturevalue("postgres_url")
        if request.param == "postgresql"
        else sqlite_url(tmp_path / "r.db")
    )
    opened = open_store(url)
    yield opened
    opened.close()


def test_the_shown_events_are_the_accepted_steps_and_the_last_ones_in_order(store: RunStore) -> None:
    store.put_source("h1", "wf", b'{"id": "wf"}')
    run = store.create(record("r1"), [NewEvent(EventType.STARTED, None, {})])
    log = [NewEvent(EventType.ACCEPTED, "s1", {"output": "one"})] + [TOOL] * 300
    log += [NewEvent(EventType.ACCEPTED, "s2", {"output": "two"})] + [TOOL] * 300
    run = store.update(run, RunUpdate(), log, "gate")
    store.create(record("r2"), [NewEvent(EventType.ACCEPTED, "s9", {})])  # another run's is not read

    everything = store.events("r1")
    shown = store.shown_events("r1", 20)
    assert [e.seq for e in shown] == [2, 303, *[e.seq for e in everything][-20:]]
    assert all(e == everything[e.seq - 1] for e in shown)
    assert [e.data["output"] for e in store.shown_events("r1", 0)] == ["one", "two"]
    assert [e.seq for e in store.shown_events("r1", 700)] == [e.seq for e in everything]


def test_the_last_events_and_an_accepted_step_among_them_come_once(store: RunStore) -> None:
    store.put_source("h1", "wf", b'{"id": "wf"}')
    run = store.create(record("r1"), [NewEvent(EventType.STARTED, None, {})])
    store.update(run, RunUpdate(), [TOOL, NewEvent(EventType.ACCEPTED, "s1", {}), TOOL], "gate")
    assert [(e.seq, e.type) for e in store.shown_events("r1", 3)] == [
        (2, "gate"),
        (3, "accepted"),
        (4, "gate"),
    ]


def test_a_sqlite_store_finds_the_shown_events_through_its_indexes(tmp_path: Path) -> None:
    open_store(sqlite_url(tmp_path / "r.db")).close()
    db = sqlite3.connect(tmp_path / "r.db")
    plan = db.execute(
        "EXPLAIN QUERY PLAN " + shown_events_query("?"), shown_events_values("r", 20)
    ).fetchall()
    db.close()
    steps = [row[3] for row in plan if row[3].startswith(("SEARCH", "SCAN"))]
    assert steps and all(s.startswith("SEARCH") for s in steps), steps
    assert any("run_events_accepted" in s for s in steps)
