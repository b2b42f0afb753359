"""A run store filled with a given event log, written straight into its tables: the
statistics' golden case (spec/cases/stats/log.json) and the stats benchmark's million
events. The store is opened (and so migrated) by handrail first; rows then go in by
`executemany` on SQLite and `COPY` on PostgreSQL, and the stats' summaries derived from
them as the migration that made those tables does."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from handrail.store.chain_form import event_hash, hashed_form
from handrail.store.open import open_store
from handrail.store.schema import statements, stats_fill
from handrail.store.stats import last_line
from handrail.store.urls import sqlite_path

# a runs row as these logs give it: every column but the statistics' marks, which the fill derives
RUN_COLUMNS = (
    "id, owner, workspace, workflow_id, workflow_version, source_hash, goal, status, context, position, "
    "accepted, created_at, updated_at, version, events, head"
)
CASE = Path(__file__).resolve().parents[2] / "spec" / "cases" / "stats" / "log.json"

Row = tuple[Any, ...]


def case() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(CASE.read_text())
    return loaded


def rows_of(log: dict[str, Any]) -> tuple[list[Row], list[Row], list[Row]]:
    """The sources, runs and events rows of a log in the shape of `log.json`."""
    sources = [
        (name, doc["id"], json.dumps(doc).encode(), "2026-01-01T00:00:00.000Z")
        for name, doc in log["sources"].items()
    ]
    runs: list[Row] = []
    events: list[Row] = []
    for run in log["runs"]:
        listed = run["events"]
        accepted = sum(1 for e in listed if e[0] == "accepted")
        position = {"step": None if run["step"] is None else {"id": run["step"], "title": run["step"]}}
        first, last = listed[0][2], listed[-1][2]
        runs.append(
            (run["id"], run["owner"], "/work/demo", log["sources"][run["source"]]["id"], run["version"],
             run["source"], "a goal", run["status"], "{}", json.dumps(position), accepted, first, last,
             len(listed), len(listed))
        )  # fmt: skip
        for seq, (kind, step, at, data) in enumerate(listed, 1):
            actor = run["owner"]
            if kind in ("approved", "declined"):
                actor = data["person"]
            # data written as text is kept as it is: the escaped form of a lone surrogate
            text = data if isinstance(data, str) else json.dumps(data)
            events.append((run["id"], seq, kind, at, actor, step, text))
    return sources, runs, events


def chained(runs: Iterable[Row], events: Iterable[Row]) -> tuple[list[Row], list[Row]]:
    """The rows with the hash chain the store keeps (spec/record.md): each event's hash,
    each run's head; events in order of run and seq."""
    heads: dict[str, str | None] = {}
    linked: list[Row] = []
    for run_id, seq, kind, at, actor, step, text in events:
        form = hashed_form(run_id, seq, kind, at, actor, step, json.loads(text), heads.get(run_id))
        heads[run_id] = event_hash(form)
        linked.append((run_id, seq, kind, at, actor, step, text, heads[run_id]))
    return [(*run, heads.get(run[0])) for run in runs], linked


def fill(url: str, sources: Iterable[Row], runs: Iterable[Row], events: Iterable[Row]) -> None:
    """Write the rows into the store at `url` (made and migrated here if new)."""
    open_store(url).close()
    runs, events = chained(runs, events)
    if url.startswith("sqlite:"):
        db = sqlite3.connect(sqlite_path(url), isolation_level=None)
        try:
            db.execute("BEGIN")
            db.executemany("INSERT INTO workflow_sources VALUES (?, ?, ?, ?)", sources)
            db.executemany(f"INSERT INTO runs ({RUN_COLUMNS}) VALUES ({', '.join('?' * 16)})", runs)
            db.executemany("INSERT INTO run_events VALUES (?, ?, ?, ?, ?, ?, ?, ?)", events)
            db.create_function("last_line", 1, last_line, deterministic=True)
            for statement in statements(stats_fill("sqlite")):  # the summaries writes keep
                db.execute(statement)
            db.execute("COMMIT")
            db.execute("ANALYZE")
        finally:
            db.close()
        return
    import psycopg

    with psycopg.connect(url) as pg:
        with pg.cursor() as cur:
            for table, rows in (
                ("workflow_sources", sources),
                (f"runs ({RUN_COLUMNS})", runs),
                ("run_events", events),
            ):
                with cur.copy(f"COPY {table} FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            cur.execute(stats_fill("postgresql").encode())  # the summaries writes keep
        pg.commit()
        pg.autocommit = True
        pg.execute("ANALYZE")


def fill_case(url: str) -> None:
    fill(url, *rows_of(case()))
