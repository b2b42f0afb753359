"""The statistics' index: a store made before it existed opens, gains it, and keeps its runs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from handrail.store.open import open_store
from handrail.store.schema import MIGRATIONS_TABLE, migrations, statements
from handrail.store.stats import StatsFilter, workflow_stats
from handrail.store.urls import sqlite_url
from tests.helpers.event_log import case, fill, rows_of


def test_a_store_made_before_the_stats_index_opens_upgraded_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    first = migrations("sqlite")[0]  # the schema before the index
    for statement in statements(first):
        db.execute(statement)
    db.execute(MIGRATIONS_TABLE)
    db.execute("INSERT INTO schema_migrations VALUES (1, '2026-01-01T00:00:00.000Z')")
    sources, runs, events = rows_of(case())
    db.executemany("INSERT INTO workflow_sources VALUES (?, ?, ?, ?)", sources)
    db.executemany(f"INSERT INTO runs VALUES ({', '.join('?' * 15)})", runs)
    db.executemany("INSERT INTO run_events VALUES (?, ?, ?, ?, ?, ?, ?)", events)
    assert "runs_by_workflow" not in {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    db.close()

    store = open_store(sqlite_url(path))
    try:
        (demo,) = workflow_stats(store, StatsFilter("demo"))
    finally:
        store.close()
    assert [v["runs"]["started"] for v in demo["versions"]] == [3, 2]
    db = sqlite3.connect(path)
    assert "runs_by_workflow" in {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    plan = db.execute("EXPLAIN QUERY PLAN SELECT id FROM runs WHERE workflow_id = 'demo'").fetchall()
    db.close()
    assert "runs_by_workflow" in str(plan)


def test_the_stats_index_is_made_on_postgresql_too(postgres_url: str) -> None:
    fill(postgres_url, *rows_of(case()))
    store = open_store(postgres_url)
    try:
        found = store.aggregate("SELECT indexname FROM pg_indexes WHERE tablename = 'runs'", [])
    finally:
        store.close()
    assert ("runs_by_workflow",) in found
