"""The figures a metrics scrape reads from the store (store/gauges.py): runs by status and
the oldest waiting approval, the same on SQLite and PostgreSQL, from the status index; a
store made before that index opens upgraded and keeps its runs."""

from __future__ import annotations

import sqlite3
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

from handrail.model.runs import RunStatus
from handrail.store.gauges import oldest_waiting_seconds, runs_by_status
from handrail.store.open import open_store
from handrail.store.schema import MIGRATIONS_TABLE, migrations, statements
from handrail.store.urls import sqlite_url
from tests.helpers.event_log import case, fill, rows_of

STATUS, UPDATED = 7, 12  # the columns of a runs row in tests/helpers/event_log.py


def _expected() -> tuple[dict[str, int], str | None]:
    _, runs, _ = rows_of(case())
    counts = Counter(str(r[STATUS]) for r in runs)
    waiting = [str(r[UPDATED]) for r in runs if r[STATUS] == RunStatus.AWAITING_APPROVAL]
    return {s.value: counts.get(s.value, 0) for s in RunStatus}, min(waiting, default=None)


def _check(url: str) -> None:
    fill(url, *rows_of(case()))
    counts, oldest = _expected()
    now = datetime.fromisoformat("2026-06-01T00:00:00+00:00")
    store = open_store(url)
    try:
        assert runs_by_status(store) == counts
        waited = oldest_waiting_seconds(store, now)
    finally:
        store.close()
    if oldest is None:
        assert waited == 0.0
    else:
        since = datetime.fromisoformat(oldest.replace("Z", "+00:00"))
        assert waited == (now - since) / timedelta(seconds=1)


def test_runs_by_status_and_the_oldest_wait_on_sqlite_use_the_status_index(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    _check(sqlite_url(path))
    db = sqlite3.connect(path)
    plan = db.execute("EXPLAIN QUERY PLAN SELECT MIN(updated_at) FROM runs WHERE status = 'x'").fetchall()
    db.close()
    assert "runs_by_status" in str(plan)


def test_runs_by_status_and_the_oldest_wait_on_postgresql(postgres_url: str) -> None:
    _check(postgres_url)


def test_a_store_made_before_the_status_index_opens_upgraded_and_keeps_its_runs(tmp_path: Path) -> None:
    rendered = migrations("sqlite")
    mine = next(i for i, m in enumerate(rendered) if "runs_by_status" in m)
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    for migration in rendered[:mine]:
        for statement in statements(migration):
            db.execute(statement)
    db.execute(MIGRATIONS_TABLE)
    db.executemany(
        "INSERT INTO schema_migrations VALUES (?, '2026-01-01T00:00:00.000Z')",
        [(n + 1,) for n in range(mine)],
    )
    _, runs, _ = rows_of(case())
    columns = len(db.execute("SELECT * FROM runs LIMIT 0").description)
    db.executemany(
        f"INSERT INTO runs VALUES ({', '.join('?' * columns)})", [(*r, None)[:columns] for r in runs]
    )
    db.close()
    store = open_store(sqlite_url(path))
    try:
        assert runs_by_status(store) == _expected()[0]
    finally:
        store.close()
    db = sqlite3.connect(path)
    assert "runs_by_status" in {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    db.close()
