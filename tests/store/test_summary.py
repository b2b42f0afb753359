"""The statistics' summary tables (store/summary.py): what each write adds is what the
event log gives when the summaries are derived from it in SQL (the migration's way),
a write whose summary fails writes nothing, and a store made before the summaries
opens upgraded and gives the golden figures, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from handrail.cli import main
from handrail.model.errors import StorageError
from handrail.model.runs import NewEvent, RunRecord, RunUpdate
from handrail.runs import gate_store
from handrail.store import RunStore, open_store
from handrail.store.schema import (
    MIGRATIONS,
    MIGRATIONS_TABLE,
    STATS_TABLES,
    migrations,
    statements,
    stats_fill,
)
from handrail.store.stats import last_line
from handrail.store.urls import sqlite_path, sqlite_url
from tests.helpers.event_log import CASE, RUN_COLUMNS, case, chained, rows_of

STORES = ("postgresql", "sqlite")
SUMMARIES = next(i for i, m in enumerate(MIGRATIONS) if "CREATE TABLE stats_visits" in m)


@pytest.fixture(params=STORES)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgresql":
        url: str = request.getfixturevalue("postgres_url")
        return url
    return sqlite_url(tmp_path / "runs.db")


@pytest.fixture
def store(store_url: str) -> Iterator[RunStore]:
    opened = open_store(store_url)
    opened.put_source("h1", "wf", b'{"id": "wf"}')
    yield opened
    opened.close()


def record(run_id: str, workflow_id: str = "wf") -> RunRecord:
    at = "2026-01-01T00:00:00.000Z"
    position = {"step": {"id": "s1", "title": "S1"}}
    return RunRecord(
        run_id, "ann", "/w", workflow_id, "1.0.0", "h1", "goal", "active", {}, position, 0, at, at, 1
    )


def check(kind: str, passed: bool, **more: Any) -> NewEvent:
    return NewEvent("check", "s1", {"check": kind, "passed": passed, **more})


def snapshot(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every summary row, in one order, and each run's marks read as JSON (PostgreSQL
    spaces its JSON text differently)."""
    found: dict[str, list[tuple[Any, ...]]] = {}
    for table in STATS_TABLES:
        rows = query(url, f"SELECT * FROM {table}")
        found[table] = sorted(rows, key=repr)
    found["runs"] = sorted((r[0], json.loads(r[1])) for r in query(url, "SELECT id, stats FROM runs"))
    return found


def query(url: str, sql: str) -> list[tuple[Any, ...]]:
    if url.startswith("sqlite:"):
        with sqlite3.connect(sqlite_path(url)) as db:
            return db.execute(sql).fetchall()
    with psycopg.connect(url) as pg:
        return pg.execute(sql.encode()).fetchall()


def refill(url: str) -> None:
    """The summaries derived again from the events alone, as the migration derives them."""
    if url.startswith("sqlite:"):
        db = sqlite3.connect(sqlite_path(url), isolation_level=None)
        db.create_function("last_line", 1, last_line, deterministic=True)
        db.execute("BEGIN")
        for table in STATS_TABLES:
            db.execute(f"DELETE FROM {table}")
        for statement in statements(stats_fill("sqlite")):
            db.execute(statement)
        db.execute("COMMIT")
        db.close()
        return
    with psycopg.connect(url) as pg:
        for table in STATS_TABLES:
            pg.execute(f"DELETE FROM {table}".encode())
        pg.execute(stats_fill("postgresql").encode())


def test_what_each_write_adds_to_the_summaries_is_what_the_event_log_gives(
    store: RunStore, store_url: str
) -> None:
    run = store.create(record("r1"), [NewEvent("started")])
    other = store.create(record("r2", "other"), [NewEvent("started"), NewEvent("accepted", "s1")])
    steps: list[list[NewEvent]] = [
        [NewEvent("rejected", "s1", {"issues": ["too short", "no summary", "too short"]})],
        [
            check("command", False, output="collected\nFAIL test_parse\n\n", durationMs=1200),
            check("file", True),
        ],
        # checks written by the next write, right after: their places go on counting
        [check("command", True, durationMs=15, timedOut=False), NewEvent("rejected", "s1", {"issues": []})],
        [NewEvent("awaiting_approval", "s1"), NewEvent("declined", "s1", {"person": "bo"})],
        [NewEvent("awaiting_approval", "s1")],
        [NewEvent("approved", "s1", {"person": "bo"}), NewEvent("accepted", "s1", {"output": "x"})],
        # a lone surrogate keeps this rejection's data in the escaped form: counted, not read
        [NewEvent("rejected", "s2", {"issues": ["\ud800 odd"]})],
        [NewEvent("context", None, {"contextChanges": {"n": 1}})],
        [check("git", False, timedOut=True)],
        [NewEvent("gate", "s2", {"decision": "deny"}), NewEvent("gate", "s2", {"decision": "allow"})],
        [check("command", False, output="boom"), NewEvent("accepted", "s2")],
        [NewEvent("rejected", "s1", {"issues": ["again"]}), NewEvent("accepted", "s1")],
    ]
    for events in steps:
        run = store.update(run, RunUpdate(), events, "ann")
    store.update(other, RunUpdate(), [NewEvent("rejected", "s2", {"issues": ["x"]})], "ann")
    # a hook's records, written as the gate writes them (runs/gate_store.py)
    gate_store.record(store, run, "s1", {"decision": "block"})
    gate_store.record(store, store.get("r1") or run, "s1", {"decision": "allow"})
    run = store.get("r1") or run
    store.update(run, RunUpdate(), [check("command", True), NewEvent("accepted", "s1")], "ann")

    written = snapshot(store_url)
    assert len(written["stats_checks"]) >= 5 and written["stats_gate"] and written["stats_waits"]
    # in the log's order: three checks in a row (over two writes), then each alone
    places = [r[7] for r in sorted(written["stats_checks"], key=lambda r: r[5]) if r[0] == "r1"]
    assert places[:5] == [0, 1, 2, 0, 0]
    refill(store_url)
    assert snapshot(store_url) == written


@pytest.mark.parametrize("table", ["stats_visits", "stats_checks"])
def test_a_write_whose_summary_fails_writes_neither_its_events_nor_its_run(
    store: RunStore, store_url: str, table: str
) -> None:
    run = store.create(record("r1"), [NewEvent("started")])
    refuse = (
        f"CREATE TRIGGER refuse BEFORE INSERT ON {table} BEGIN SELECT RAISE(ABORT, 'refused'); END"
        if store_url.startswith("sqlite:")
        else "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "RAISE EXCEPTION 'refused'; END $$; "
        f"CREATE TRIGGER refuse BEFORE INSERT ON {table} FOR EACH ROW EXECUTE FUNCTION refuse()"
    )
    if store_url.startswith("sqlite:"):
        with sqlite3.connect(sqlite_path(store_url)) as db:
            db.execute(refuse)
    else:
        with psycopg.connect(store_url) as pg:
            pg.execute(refuse.encode())
    events = [check("command", True), NewEvent("accepted", "s1", {"output": "x"})]
    with pytest.raises(StorageError, match="refused"):
        store.update(run, RunUpdate(accepted=1), events, "ann")
    assert [e.type for e in store.events("r1")] == ["started"]
    after = store.get("r1")
    assert after is not None and (after.version, after.accepted, after.events) == (1, 0, 1)


def test_a_store_made_before_the_summaries_opens_upgraded_and_gives_the_golden_figures(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sources, runs, events = rows_of(case())
    runs, events = chained(runs, events)
    if store_url.startswith("sqlite:"):
        db = sqlite3.connect(sqlite_path(store_url), isolation_level=None)
        for migration in migrations("sqlite")[:SUMMARIES]:
            for statement in statements(migration):
                db.execute(statement)
        db.execute(MIGRATIONS_TABLE)
        db.executemany(
            "INSERT INTO schema_migrations VALUES (?, '2026-01-01T00:00:00.000Z')",
            [(n,) for n in range(1, SUMMARIES + 1)],
        )
        db.executemany("INSERT INTO workflow_sources VALUES (?, ?, ?, ?)", sources)
        db.executemany(f"INSERT INTO runs ({RUN_COLUMNS}) VALUES ({', '.join('?' * 16)})", runs)
        db.executemany("INSERT INTO run_events VALUES (?, ?, ?, ?, ?, ?, ?, ?)", events)
        db.close()
    else:
        with psycopg.connect(store_url) as pg:
            for migration in migrations("postgresql")[:SUMMARIES]:
                pg.execute(migration.encode())
            pg.execute(MIGRATIONS_TABLE)
            for n in range(1, SUMMARIES + 1):
                pg.execute("INSERT INTO schema_migrations VALUES (%s, '2026-01-01T00:00:00.000Z')", (n,))
            with pg.cursor() as cur:
                for table, rows in (
                    ("workflow_sources", sources),
                    (f"runs ({RUN_COLUMNS})", runs),
                    ("run_events", events),
                ):
                    with cur.copy(f"COPY {table} FROM STDIN") as copy:
                        for row in rows:
                            copy.write_row(row)
    assert not [r for r in query(store_url, "SELECT version FROM schema_migrations") if r[0] > SUMMARIES]

    assert main(["stats", "demo", "--format", "json", "--database", store_url]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == ((CASE.parent / "expected.json").read_text(), "")
    assert max(r[0] for r in query(store_url, "SELECT version FROM schema_migrations")) == len(MIGRATIONS)
    assert query(store_url, "SELECT COUNT(*) FROM stats_visits")[0][0] > 0
