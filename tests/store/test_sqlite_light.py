"""The light SQLite path the gate's hook reads and writes through: what it appends
reads back exactly as the full store's own writes, it moves a run's version and event
count as every write does, it takes only a database of this handrail's schema, and
it waits for another process's write lock like the full store."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from handrail.runs import gate_store
from handrail.store import sqlite_light
from handrail.store.chain import check_run
from handrail.store.schema import MIGRATIONS
from handrail.store.sqlite import SqliteStore
from handrail.store.sqlite_light import LightSqlite, open_light
from tests.gate.runs import GateWorld
from tests.helpers.locks import write_lock_held

AGENT_TEXT = {"event": "before-tool", "tool": "Edit", "action": "edit:caf\u00e9/\ud800.py", "n": "\u2028"}


@pytest.fixture
def world(tmp_path: Path) -> Iterator[GateWorld]:
    found = GateWorld(tmp_path)
    found.start("plan")
    found.close()
    yield found


def light(world: GateWorld) -> LightSqlite:
    opened = open_light(str(world.database))
    assert opened is not None
    return opened


def test_an_event_the_light_path_appends_reads_back_as_the_full_store_writes_it(world: GateWorld) -> None:
    assert world.run_id is not None
    full = SqliteStore(world.database)
    try:
        run = full.get(world.run_id)
        assert run is not None
        gate_store.record(full, run, "plan", AGENT_TEXT)
        store = light(world)
        try:
            assert store.append(world.run_id, "gate", "plan", AGENT_TEXT, "gate")
        finally:
            store.close()
        *_, by_full, by_light = full.events(world.run_id)
        assert (by_light.type, by_light.step_id, by_light.actor) == ("gate", "plan", "gate")
        assert by_light.data == by_full.data == AGENT_TEXT
        assert by_light.seq == by_full.seq + 1
        after = full.get(world.run_id)
        assert after is not None and (after.version, after.events) == (run.version + 2, by_light.seq)
        with sqlite3.connect(world.database) as db:
            texts = [r[0] for r in db.execute("SELECT data FROM run_events ORDER BY seq DESC LIMIT 2")]
        assert texts[0] == texts[1]  # the same stored text, escapes and all
        assert check_run(full, world.run_id) is None  # the light path chains as the full store does
    finally:
        full.close()


def test_an_append_to_a_run_that_is_gone_writes_nothing(world: GateWorld) -> None:
    store = light(world)
    try:
        assert store.append("run_missing", "gate", None, {"event": "stop"}, "gate") is False
    finally:
        store.close()
    with sqlite3.connect(world.database) as db:
        assert db.execute("SELECT COUNT(*) FROM run_events WHERE run_id = 'run_missing'").fetchone()[0] == 0


@pytest.mark.parametrize("version", [None, 0, len(MIGRATIONS) + 1])
def test_only_a_database_of_this_schema_version_is_taken(tmp_path: Path, version: int | None) -> None:
    path = tmp_path / "handrail.db"
    with sqlite3.connect(path) as db:
        if version is not None:
            db.execute(
                "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            db.execute("INSERT INTO schema_migrations VALUES (?, 'then')", (version,))
    assert open_light(str(path)) is None


def test_a_missing_file_is_not_created(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="cannot open the run database"):
        open_light(str(tmp_path / "none.db"))
    assert not (tmp_path / "none.db").exists()


def test_a_file_named_with_uri_characters_is_opened_as_itself(tmp_path: Path) -> None:
    folder = tmp_path / "a?b#c%20d"
    folder.mkdir()
    SqliteStore(folder / "handrail.db").close()
    store = open_light(str(folder / "handrail.db"))
    assert store is not None
    store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a?b#c%20d"]


def test_an_append_waits_for_another_process_s_write_lock(world: GateWorld) -> None:
    done: list[bool] = []

    def append() -> None:
        store = light(world)
        try:
            done.append(store.append(world.run_id or "", "gate", "plan", {"e": 1}, "gate"))
        finally:
            store.close()

    with write_lock_held(world.database):
        writer = threading.Thread(target=append)
        writer.start()
        time.sleep(0.5)
        assert done == []  # still waiting for the lock
    writer.join(10)
    assert done == [True]


INSTANTS = [0, 1_764_190_799_999_999_999, 1_767_225_599_000_499_999, 951_782_400_123_456_789]


@pytest.mark.parametrize("ns", INSTANTS)
def test_the_light_path_writes_times_as_the_full_store_writes_them(
    ns: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_light.time, "time_ns", lambda: ns)
    instant = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ns // 1000)
    assert sqlite_light.now() == instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")
