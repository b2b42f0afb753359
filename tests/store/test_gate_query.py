"""The events a gate decision reads, on every store: the run's last few, its first, its
accepted steps and its latest session bindings, however long its log; the indexes
that find them, and a store made before those indexes opening upgraded."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.model.runs import EventType, NewEvent, RunUpdate
from handrail.store import RunStore, open_store
from handrail.store.gate_query import BINDINGS_READ, gate_events_query, gate_events_values
from handrail.store.schema import MIGRATIONS, MIGRATIONS_TABLE, migrations, statements
from handrail.store.urls import sqlite_url
from tests.store.test_store import record

pytestmark = pytest.mark.slow


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


def bind(session: str) -> NewEvent:
    return NewEvent(
        EventType.GATE, "s1", {"event": "session", "decision": "context", "session": session, "bind": True}
    )


def test_a_gate_reads_the_first_accepted_bound_and_last_events_of_a_long_log(store: RunStore) -> None:
    store.put_source("h1", "wf", b'{"id": "wf"}')
    run = store.create(record("r1"), [NewEvent(EventType.STARTED, None, {"workflowFolders": ["/w"]})])
    tool = NewEvent(
        EventType.GATE, "s1", {"event": "after-tool", "decision": "record", "note": '"bind":true'}
    )
    log = [bind(f"old-{n}") for n in range(BINDINGS_READ + 2)]
    log += [NewEvent(EventType.ACCEPTED, "s1", {})] + [tool] * 300 + [bind("s-new")]
    log += [NewEvent(EventType.ACCEPTED, "s2", {})] + [tool] * 300
    for start in range(0, len(log), 200):
        run = store.update(run, RunUpdate(), log[start : start + 200], "gate")
    store.create(record("r2"), [NewEvent(EventType.STARTED, None, {})])  # another run's log is not read

    read = store.gate_events("r1", 20)

    everything = store.events("r1")
    assert [e.seq for e in read] == sorted(e.seq for e in read)
    first = read[0]
    assert (first.seq, first.data) == (1, {"workflowFolders": ["/w"]})
    assert [e.step_id for e in read if e.type == "accepted"] == ["s1", "s2"]
    bindings = [e.data["session"] for e in read if e.data.get("bind") is True]
    assert bindings[-1] == "s-new" and len(bindings) == BINDINGS_READ
    assert [e.seq for e in read][-20:] == [e.seq for e in everything][-20:]
    assert len(read) == 1 + 2 + BINDINGS_READ + 20
    assert all(e == everything[e.seq - 1] for e in read)


def test_a_sqlite_store_finds_the_gate_s_events_through_its_indexes(tmp_path: Path) -> None:
    store = open_store(sqlite_url(tmp_path / "r.db"))
    store.close()
    db = sqlite3.connect(tmp_path / "r.db")
    plan = db.execute("EXPLAIN QUERY PLAN " + gate_events_query("?"), gate_events_values("r", 20)).fetchall()
    db.close()
    steps = [row[3] for row in plan if row[3].startswith(("SEARCH", "SCAN run_events"))]
    assert all(s.startswith("SEARCH") for s in steps), steps
    assert any("run_events_accepted" in s for s in steps) and any("run_events_binds" in s for s in steps)


def test_a_store_made_before_the_gate_s_indexes_opens_upgraded_and_keeps_its_bindings(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    before = next(n for n, m in enumerate(MIGRATIONS) if "run_events_binds" in m)
    db = sqlite3.connect(path, isolation_level=None)
    for migration in migrations("sqlite")[:before]:
        for statement in statements(migration):
            db.execute(statement)
    db.execute(MIGRATIONS_TABLE)
    for version in range(1, before + 1):
        db.execute("INSERT INTO schema_migrations VALUES (?, '2026-01-01T00:00:00.000Z')", (version,))
    db.execute("INSERT INTO workflow_sources VALUES ('h1', 'wf', x'7b7d', '2026-01-01T00:00:00.000Z')")
    old = record("r1")
    db.execute(
        "INSERT INTO runs (id, owner, workspace, workflow_id, workflow_version, source_hash, goal, status, "
        "context, position, accepted, created_at, updated_at, version, events) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, '{}', ?, 0, ?, ?, 1, 2)",
        (
            old.id,
            old.owner,
            old.workspace,
            old.workflow_id,
            old.workflow_version,
            old.source_hash,
            old.goal,
            old.status,
            json.dumps(old.position),
            old.created_at,
            old.updated_at,
        ),
    )
    bound = json.dumps(
        {"event": "session", "decision": "context", "session": "s-1", "bind": True}, separators=(",", ":")
    )
    db.executemany(
        "INSERT INTO run_events (run_id, seq, type, at, actor, step_id, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            ("r1", 1, "started", old.created_at, "local", None, "{}"),
            ("r1", 2, "gate", old.created_at, "gate", "s1", bound),
        ],
    )
    db.close()

    store = open_store(sqlite_url(path))
    try:
        read = store.gate_events("r1", 1)
    finally:
        store.close()
    assert [(e.seq, e.data.get("session")) for e in read] == [(1, None), (2, "s-1")]
    db = sqlite3.connect(path)
    names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    db.close()
    assert {"run_events_accepted", "run_events_binds"} <= names


def test_the_gate_s_indexes_are_made_on_postgresql_too(postgres_url: str) -> None:
    store = open_store(postgres_url)
    try:
        found = store.aggregate("SELECT indexname FROM pg_indexes WHERE tablename = 'run_events'", [])
    finally:
        store.close()
    assert {("run_events_accepted",), ("run_events_binds",)} <= set(found)
