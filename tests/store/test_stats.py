"""The statistics in the store: the index they use (a store made before it opens, gains it,
and keeps its runs), and the same figures from SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from benchmarks.stats_bench import generate
from handrail.catalog import load_catalog
from handrail.service.core import Service, later_runs
from handrail.store.open import open_store
from handrail.store.schema import MIGRATIONS_TABLE, migrations, statements
from handrail.store.stats import StatsFilter, workflow_stats
from handrail.store.urls import sqlite_url
from tests.helpers.event_log import case, fill, rows_of
from tests.runs.workflows import REVIEW_ID, review_files, write


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


def test_the_benchmark_log_gives_the_same_figures_on_sqlite_and_postgresql(
    tmp_path: Path, postgres_url: str
) -> None:
    sources, runs, events = generate(400)
    found = []
    for url in (sqlite_url(tmp_path / "bench.db"), postgres_url):
        fill(url, sources, runs, events)
        store = open_store(url)
        try:
            found.append(workflow_stats(store, StatsFilter("bench-stats")))
        finally:
            store.close()
    assert found[0] == found[1]
    (bench,) = found[0]
    review = {s["id"]: s for s in bench["versions"][0]["steps"]}["review"]
    assert review["attempts"]["max"] >= 2 and review["seconds"]["p90"] > review["seconds"]["median"]
    assert review["approvals"]["waitSeconds"]["median"] is not None
    implement = [c for c in bench["versions"][0]["checks"] if c["step"] == "implement"]
    assert [c["index"] for c in implement] == [0, 1] and implement[0]["failingLines"]


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_parallel_loops_branches_count_their_run_once_on_both_databases(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = sqlite_url(tmp_path / "runs.db") if kind == "sqlite" else request.getfixturevalue("postgres_url")
    write(tmp_path / "flows", review_files(max_parallel=3))
    service = Service(load_catalog(tmp_path / "flows", bundled=False), runs=later_runs(url))
    try:
        for n, files in enumerate((["a", "b", "c"], ["d", "e", "f"])):
            parent = service.call("workflow_start", {"workflowId": REVIEW_ID, "goal": f"Batch {n}"})["runId"]
            said = {"runId": parent, "stepId": "collect", "output": "Files.", "context": {"files": files}}
            branches = [b["runId"] for b in service.call("workflow_continue", said)["branches"]]
            assert len(branches) == 3
            done = branches if n == 0 else branches[:1]  # the first run's branches all finish
            for branch in done:
                for step in ("review", "note"):
                    out = "Reviewed" if step == "review" else "Nothing"
                    service.call("workflow_continue", {"runId": branch, "stepId": step, "output": out})
        store = open_store(url)
        try:
            (review,) = workflow_stats(store, StatsFilter(REVIEW_ID))
        finally:
            store.close()
    finally:
        service.close()
    (version,) = review["versions"]
    assert version["runs"] == {"started": 2, "completed": 0, "abandoned": 0, "active": 2}
    steps = {s["id"]: (s["reached"], s["accepted"], s["submissions"]) for s in version["steps"]}
    # 4 branches reviewed (3 and 1), each a submission; 2 runs reached and accepted it
    assert steps["collect"] == (2, 2, 2) and steps["review"] == (2, 2, 4) and steps["note"] == (2, 2, 4)
    assert steps["report"][0] == 1  # the first run, its branches gathered, stands there
