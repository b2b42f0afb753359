"""The gate's reads and writes on a full `RunStore` (PostgreSQL's path, a server's own
store): the same facts as the light SQLite path, and a `gate` event that still lands
when another writer moved the run after the gate read it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handrail.runs import gate_store
from handrail.store.base import EventType, NewEvent, RunUpdate
from handrail.store.sqlite import SqliteStore
from handrail.store.sqlite_light import open_light
from tests.gate.runs import GateWorld


@pytest.fixture
def world(tmp_path: Path) -> Iterator[GateWorld]:
    found = GateWorld(tmp_path)
    found.start("implement")
    found.close()
    yield found


def test_a_gate_event_lands_after_another_writer_moved_the_run(world: GateWorld) -> None:
    store = SqliteStore(world.database)
    try:
        read = gate_store.active_run(store, [str(world.workspace / "src")])
        assert read is not None and read.id == world.run_id
        moved = store.get(read.id)
        assert moved is not None
        store.update(moved, RunUpdate(), [NewEvent(EventType.CONTEXT, None, {"note": "meanwhile"})], "agent")
        gate_store.record(store, read, "implement", {"event": "stop", "decision": "block"})
        *_, meanwhile, gate = store.events(read.id)
        assert (meanwhile.type, gate.type, gate.seq) == ("context", "gate", meanwhile.seq + 1)
        assert gate.data == {"event": "stop", "decision": "block"}
    finally:
        store.close()


def test_the_full_store_and_the_light_path_give_the_same_facts(world: GateWorld) -> None:
    full = SqliteStore(world.database)
    light = open_light(str(world.database))
    assert light is not None
    try:
        for store in (full, light):
            run = gate_store.active_run(store, [str(world.workspace)])
            assert run is not None
            gate_store.record(store, run, "implement", {"event": "stop", "decision": "block"})
        facts = []
        for store in (full, light):
            run = gate_store.active_run(store, [str(world.workspace)])
            assert run is not None
            facts.append(gate_store.facts(store, run))
        by_full, by_light = facts
        assert by_full._replace(policy=None) == by_light._replace(policy=None)
        assert by_full.stop_refusals == 2 and by_full.accepted == ("plan",) and by_full.step_id == "implement"
        assert by_full.policy is not None and by_light.policy is not None
        assert [r.text for r in by_full.policy.deny] == [r.text for r in by_light.policy.deny]
    finally:
        full.close()
        light.close()


def synchronous_levels_of(db: sqlite3.Connection) -> list[str]:
    """The `PRAGMA synchronous` levels a connection is set to, in order, from now on."""
    levels: list[str] = []

    def seen(statement: str) -> None:
        if statement.upper().startswith("PRAGMA SYNCHRONOUS") and "=" in statement:
            levels.append(statement.split("=")[-1].strip().upper())

    db.set_trace_callback(seen)
    return levels


def test_a_refusal_is_committed_without_waiting_for_the_disk_and_the_writer_is_full_again_after(
    world: GateWorld,
) -> None:
    store = SqliteStore(world.database)
    try:
        run = store.get(str(world.run_id))
        assert run is not None
        levels = synchronous_levels_of(store._db)
        gate_store.record(store, run, "implement", {"event": "stop", "decision": "block"})
        assert levels == ["NORMAL", "FULL"]
        assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL for the next write
        gate_store.record(store, run, "implement", {"event": "prompt", "decision": "context"})
        assert levels == ["NORMAL", "FULL"]  # a record that is no refusal waits for the disk
        assert [e.data["decision"] for e in store.events(run.id)[-2:]] == ["block", "context"]
    finally:
        store.close()


def test_the_light_path_commits_a_refusal_without_waiting_for_the_disk_and_a_binding_with_it(
    world: GateWorld,
) -> None:
    light = open_light(str(world.database))
    assert light is not None
    try:
        run = light.get(str(world.run_id))
        assert run is not None
        levels = synchronous_levels_of(light._db)
        gate_store.record(light, run, "implement", {"event": "before-tool", "decision": "deny"})
        binding = {"event": "before-tool", "decision": "deny", "session": "s-1", "bind": True}
        gate_store.record(light, run, "implement", binding)
        assert levels == ["NORMAL", "FULL"]
    finally:
        light.close()


@pytest.mark.parametrize(
    ("data", "refusal"),
    [
        ({"event": "before-tool", "decision": "deny"}, True),
        ({"event": "stop", "decision": "block"}, True),
        ({"event": "stop", "decision": "block", "session": "s", "bind": True}, False),
        ({"event": "session", "decision": "bind", "session": "s", "bind": True}, False),
        ({"event": "prompt", "decision": "context"}, False),
        ({"event": "after-tool", "decision": "allow"}, False),
        ({"event": "outage", "decision": "deny", "count": 2}, False),
    ],
)
def test_only_a_refusal_that_binds_no_session_may_wait_for_no_fsync(
    data: dict[str, Any], refusal: bool
) -> None:
    assert gate_store.refusal_only(data) is refusal
