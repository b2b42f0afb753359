"""The gate's reads and writes on the run store: the facts of the current step from
the row's gate digest (the same as its pinned source gives), and a `gate` event that
still lands when another writer moved the run after the gate read it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from handrail.model.runs import EventType, NewEvent, RunUpdate
from handrail.runs import gate_store
from handrail.runs.gate import RunFacts
from handrail.store.sqlite import SqliteStore
from tests.gate.runs import GateWorld


@pytest.fixture
def world(world: GateWorld) -> GateWorld:
    """The shared world, its run started at `implement`, its own store closed: each test
    writes as other processes would."""
    world.start("implement")
    world.close()
    return world


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


def test_the_facts_of_the_step_come_from_the_row_s_digest_as_its_pinned_source_gives_them(
    world: GateWorld,
) -> None:
    store = SqliteStore(world.database)
    try:
        run = gate_store.active_run(store, [str(world.workspace)])
        assert run is not None and run.gate is not None
        digest = json.loads(run.gate)
        assert digest["step"] == "implement" and digest["number"] == 2
        gate_store.record(store, run, "implement", {"event": "stop", "decision": "block"})
        run = store.get(run.id)
        assert run is not None
        by_digest = gate_store.facts(store, run)
        by_source = gate_store.facts(store, run._replace(gate=None))  # a row kept before digests
        assert by_digest._replace(policy=None) == by_source._replace(policy=None)
        assert by_digest.stop_refusals == 1 and by_digest.accepted == ("plan",)
        assert by_digest.policy is not None and by_source.policy is not None
        assert [r.text for r in by_digest.policy.deny] == [r.text for r in by_source.policy.deny]
        assert by_digest.policy.allow is None and by_source.policy.allow is None  # the step allows all
    finally:
        store.close()


def test_a_helpers_refused_stops_are_counted_apart_from_the_agents_own(world: GateWorld) -> None:
    store = SqliteStore(world.database)
    try:
        run = gate_store.active_run(store, [str(world.workspace)])
        assert run is not None
        for _ in range(3):
            gate_store.record(store, run, "implement", {"event": "stop", "decision": "block", "agent": "a1"})
        facts = gate_store.facts(store, run)
        assert (facts.stop_refusals, facts.helper_stop_refusals) == (0, 3)
        gate_store.record(store, run, "implement", {"event": "stop", "decision": "block"})
        facts = gate_store.facts(store, run)
        assert (facts.stop_refusals, facts.helper_stop_refusals) == (1, 3)
    finally:
        store.close()


def padded(world: GateWorld, tools: int) -> None:
    """The world's run bound to session s-1, then `tools` tool calls recorded at its step
    and two stops refused: a long log whose facts are known."""
    store = SqliteStore(world.database)
    try:
        run = store.get(world.run_id or "")
        assert run is not None
        bind = {"event": "session", "decision": "context", "session": "s-1", "bind": True}
        run = store.update(run, RunUpdate(), [NewEvent(EventType.GATE, "implement", bind)], "gate")
        tool = {"event": "after-tool", "decision": "record", "tool": "Read", "session": "s-1"}
        for _ in range(tools // 1000):
            batch = [NewEvent(EventType.GATE, "implement", tool)] * 1000
            run = store.update(run, RunUpdate(), batch, "gate")
        block = {"event": "stop", "decision": "block", "session": "s-1"}
        store.update(run, RunUpdate(), [NewEvent(EventType.GATE, "implement", block)] * 2, "gate")
    finally:
        store.close()


def instructions_to_decide(world: GateWorld) -> tuple[int, int, RunFacts]:
    """The SQLite instructions (in hundreds) and the events a hook's store takes to find
    the run and its facts, and the facts."""
    store = SqliteStore(world.database, reading=True)
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    try:
        with store._read() as db:
            db.set_progress_handler(count, 100)
        found = gate_store.session_run(store, [str(world.workspace)], None, "s-1")
        assert found is not None
        facts = gate_store.facts(store, found[0], found[1])
        with store._read() as db:
            db.set_progress_handler(None, 100)
        whole = gate_store.facts(store, found[0], store.events(found[0].id))
        assert facts._replace(policy=None) == whole._replace(policy=None)  # as read from the whole log
        return steps[0], len(found[1]), facts
    finally:
        store.close()


def test_a_long_run_is_decided_reading_a_bounded_part_of_its_log(tmp_path: Path) -> None:
    measured = {}
    for tools in (1000, 10000):
        world = GateWorld(tmp_path / str(tools))
        world.start("implement")
        world.close()
        padded(world, tools)
        measured[tools] = instructions_to_decide(world)
    (short_steps, short_read, short), (long_steps, long_read, long) = measured[1000], measured[10000]
    same = {"run_id": "", "workspace": "", "policy": None, "workflow_folders": ()}
    assert short._replace(**same) == long._replace(**same)  # the same facts from either log
    assert long.bound == "s-1" and long.accepted == ("plan",) and long.stop_refusals == 2
    limit = gate_store.RECENT_EVENTS_READ + 1 + 1 + 8  # recent, first, accepted, bindings
    assert short_read == long_read <= limit
    assert long_steps < short_steps * 1.5, (
        short_steps,
        long_steps,
    )  # ten times the log: not ten times the work


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


@pytest.mark.parametrize(
    ("data", "refusal"),
    [
        ({"event": "before-tool", "decision": "deny"}, True),
        ({"event": "stop", "decision": "block"}, True),
        ({"event": "stop", "decision": "block", "session": "s", "bind": True}, False),
        ({"event": "session", "decision": "bind", "session": "s", "bind": True}, False),
        ({"event": "prompt", "decision": "context"}, False),
        ({"event": "after-tool", "decision": "allow"}, False),
        ({"event": "after-tool", "decision": "record", "tool": "Read"}, True),
        ({"event": "after-tool", "decision": "record", "session": "s", "bind": True}, False),
        ({"event": "outage", "decision": "deny", "count": 2}, False),
    ],
)
def test_only_a_refusal_or_a_tool_record_that_binds_no_session_may_wait_for_no_fsync(
    data: dict[str, Any], refusal: bool
) -> None:
    assert gate_store.without_fsync(data) is refusal
