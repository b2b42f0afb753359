"""The hash chain over a run's events, in SQLite and in a real PostgreSQL: runs made by
the service the MCP tools use, rows then edited behind handrail's back with the
database's own driver, and `handrail runs verify` naming what changed."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handrail.catalog import load_catalog
from handrail.cli import main
from handrail.model.runs import NewEvent, RunUpdate
from handrail.runs.record import export
from handrail.runs.record import verify as verify_record
from handrail.service.core import Service, default_runs, later_runs
from handrail.store.chain import first_break
from handrail.store.sqlite import SqliteStore
from tests.runs.workflows import WORKFLOW_ID, build_feature, write
from tests.store.test_store import record

pytestmark = pytest.mark.slow

# a hash column with its first hex digit changed
FLIPPED = "(CASE WHEN substr({0}, 1, 1) = 'a' THEN 'b' ELSE 'a' END || substr({0}, 2))"
Execute = Callable[[str, tuple[Any, ...]], None]


@pytest.fixture(params=("sqlite", "postgresql"))
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Execute]]:
    """A database URL and a way to run SQL on it directly, as someone with the file or
    the server's password could."""
    if request.param == "postgresql":
        import psycopg

        url: str = request.getfixturevalue("postgres_url")

        def on_postgres(sql: str, values: tuple[Any, ...]) -> None:
            with psycopg.connect(url, autocommit=True) as db:
                db.execute(sql.replace("?", "%s").encode(), values)

        yield url, on_postgres
        return
    path = tmp_path / "runs.db"

    def on_sqlite(sql: str, values: tuple[Any, ...]) -> None:
        with sqlite3.connect(path) as db:
            db.execute(sql, values)

    yield f"sqlite:///{path}", on_sqlite


def made_runs(folder: Path, url: str) -> tuple[str, str]:
    """Two runs: one of five events (started, a rejected attempt, two accepted steps, a
    context change), one just started."""
    write(folder / "flows", build_feature())
    service = Service(load_catalog(folder / "flows", bundled=False), runs=later_runs(url))
    try:
        start = {"workflowId": WORKFLOW_ID, "goal": "Chain me", "workspace": str(folder)}
        first = service.call("workflow_start", {**start, "context": {"parts": ["a", "b"]}})["runId"]
        service.call("workflow_continue", {"runId": first, "stepId": "plan", "output": "no plan"})
        service.call("workflow_continue", {"runId": first, "stepId": "plan", "output": "Plan: a, b."})
        service.call("workflow_continue", {"runId": first, "stepId": "build", "output": "Built a"})
        service.call("workflow_continue", {"runId": first, "context": {"extra": 2**70}})
        second = service.call("workflow_start", {**start, "goal": "Other"})["runId"]
    finally:
        service.close()
    return first, second


def verify(capsys: pytest.CaptureFixture[str], url: str, *which: str) -> tuple[int, dict[str, Any]]:
    code = main(["runs", "verify", *which, "--database", url, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_untouched_runs_verify_and_each_hash_is_the_sha256_the_spec_defines(
    database: tuple[str, Execute], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = database
    first, second = made_runs(tmp_path, url)
    code, said = verify(capsys, url, "--all")
    assert code == 0 and said["broken"] == 0
    assert {r["runId"]: r["verified"] for r in said["runs"]} == {first: True, second: True}
    # spec/record.md, recomputed here from its words, not from handrail's code
    assert main(["runs", "show", first, "--format", "json", "--database", url]) == 0
    shown = json.loads(capsys.readouterr().out)["events"]
    runs = default_runs(url)
    try:
        events = runs.store.events(first)
        head = runs.store.get(first).head  # type: ignore[union-attr]
    finally:
        runs.close()
    prev = None
    for e in events:
        form = {
            "run": first,
            "seq": e.seq,
            "type": e.type,
            "at": e.at,
            "actor": e.actor,
            "stepId": e.step_id,
            "data": e.data,
            "prev": prev,
        }
        text = json.dumps(form, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        assert hashlib.sha256(text.encode("ascii")).hexdigest() == e.hash, e.seq
        prev = e.hash
    assert prev == head and len(events) == len(shown) == 5


@pytest.mark.parametrize(
    ("edit", "seq", "words"),
    [
        (
            'UPDATE run_events SET data = \'{"output":"Plan: c."}\' WHERE run_id = ? AND seq = 3',
            3,
            "its hash",
        ),
        ("UPDATE run_events SET actor = 'mallory' WHERE run_id = ? AND seq = 2", 2, "its hash"),
        ("UPDATE run_events SET at = '2020-01-01T00:00:00.000Z' WHERE run_id = ? AND seq = 1", 1, "its hash"),
        (
            f"UPDATE run_events SET hash = {FLIPPED.format('hash')} WHERE run_id = ? AND seq = 4",
            4,
            "its hash",
        ),
        ("DELETE FROM run_events WHERE run_id = ? AND seq = 3", 3, "is missing"),
        ("DELETE FROM run_events WHERE run_id = ? AND seq = (SELECT MAX(seq) FROM run_events)", 5, "missing"),
        (f"UPDATE runs SET head = {FLIPPED.format('head')} WHERE id = ?", 5, "head hash"),
    ],
    ids=["data", "actor", "time", "stored-hash", "middle-deleted", "last-deleted", "head"],
)
def test_verify_names_the_first_event_an_edit_of_the_database_broke(
    database: tuple[str, Execute],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: str,
    seq: int,
    words: str,
) -> None:
    url, execute = database
    first, second = made_runs(tmp_path, url)
    if "MAX(seq)" in edit:
        edit = edit.replace("FROM run_events)", "FROM run_events WHERE run_id = ?)")
        execute(edit, (first, first))
    else:
        execute(edit, (first,))
    code, said = verify(capsys, url, "--all")
    assert code == 1 and said["broken"] == 1
    found = {r["runId"]: r for r in said["runs"]}
    assert found[second]["verified"] is True
    broken = found[first]["broken"]
    assert (broken["runId"], broken["seq"]) == (first, seq), broken
    assert words in broken["problem"]
    assert main(["runs", "verify", first, "--database", url]) == 1
    out = capsys.readouterr().out
    assert f"{first}  BROKEN at event {seq}:" in out and "0 verified, 1 broken" in out


def test_events_swapped_in_order_are_found_at_the_first_of_them(
    database: tuple[str, Execute], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, execute = database
    first, _ = made_runs(tmp_path, url)
    for old, new in ((2, 100), (3, 2), (100, 3)):  # swap the seq of events 2 and 3
        execute("UPDATE run_events SET seq = ? WHERE run_id = ? AND seq = ?", (new, first, old))
    code, said = verify(capsys, url, first)
    assert code == 1 and said["runs"][0]["broken"]["seq"] == 2


def test_a_new_event_chains_on_from_the_head_the_run_row_keeps(
    database: tuple[str, Execute], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = database
    first, _ = made_runs(tmp_path, url)
    assert main(["runs", "abandon", first, "--database", url]) == 0
    capsys.readouterr()
    code, said = verify(capsys, url, first)
    assert code == 0 and said["runs"][0]["events"] == 6


def test_verify_says_when_the_run_is_not_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    made_runs(tmp_path, url)
    assert main(["runs", "verify", "run_" + "0" * 32, "--database", url]) == 1
    assert "Run not found" in capsys.readouterr().err
    assert main(["runs", "verify", "--database", url]) == 2
    assert "name one of RUN, --all or --file" in capsys.readouterr().err
    assert main(["runs", "verify", "--all", "--database", f"sqlite:///{tmp_path / 'none.db'}"]) == 1
    assert "no run database at" in capsys.readouterr().err


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),  # lone surrogates included
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(data=st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4))
def test_any_json_an_event_holds_chains_and_exports_to_a_record_that_verifies(data: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = SqliteStore(Path(folder) / "runs.db")
        try:
            source = hashlib.sha256(b"{}").hexdigest()
            store.put_source(source, "wf", b"{}")
            started = [NewEvent("started", data={"goal": record("r1").goal, "sourceHash": source})]
            run = store.create(record("r1")._replace(source_hash=source), started)
            run = store.update(run, RunUpdate(), [NewEvent("context", None, data)], "alice")
            events = store.events("r1")
            assert first_break("r1", events, run.head, run.events) is None
            stored = store.get("r1")
            assert stored is not None and stored.head == run.head
            exported = export(stored, events, b"{}", "2026-01-01T00:00:00.000Z")
            assert verify_record(exported).problem is None
        finally:
            store.close()


def test_a_postgresql_database_from_before_the_chain_is_chained_when_opened(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    from handrail.store.schema import MIGRATIONS_TABLE, migrations

    at = "2026-01-01T00:00:00.000Z"
    with psycopg.connect(postgres_url, autocommit=True) as db:  # schema version 1, as first written
        db.execute(migrations("postgresql")[0].encode())
        db.execute(MIGRATIONS_TABLE)
        db.execute("INSERT INTO schema_migrations VALUES (1, %s)", (at,))
        db.execute("INSERT INTO workflow_sources VALUES ('h1', 'wf', %s, %s)", (b"{}", at))
        db.execute(
            "INSERT INTO runs VALUES ('r1', 'local', '/w', 'wf', '1.0.0', 'h1', 'Old', 'active', "
            "'{}', '{}', 0, %s, %s, 2, 2)",
            (at, at),
        )
        for seq, kind in ((1, "started"), (2, "context")):
            db.execute(
                "INSERT INTO run_events VALUES ('r1', %s, %s, %s, 'local', NULL, '{\"n\": 1}')",
                (seq, kind, at),
            )
    assert main(["runs", "verify", "r1", "--database", postgres_url]) == 0
    assert "r1  verified  2 events" in capsys.readouterr().out
    with psycopg.connect(postgres_url, autocommit=True) as db:
        row = db.execute("SELECT head FROM runs WHERE id = 'r1'").fetchone()
        links = [h for (h,) in db.execute("SELECT hash FROM run_events WHERE run_id = 'r1' ORDER BY seq")]
    assert row is not None and row[0] == links[-1] and None not in links


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        ("UPDATE runs SET accepted = accepted + 3 WHERE id = ?", "accepted is not as sealed"),
        ("UPDATE runs SET status = 'completed' WHERE id = ?", "status is not as sealed"),
        ("UPDATE runs SET owner = 'mallory' WHERE id = ?", "owner is not as sealed"),
        ("UPDATE runs SET workspace = '/elsewhere' WHERE id = ?", "workspace is not as sealed"),
        ('UPDATE runs SET position = \'{"step":{"id":"report"}}\' WHERE id = ?', "position is not as sealed"),
    ],
)
def test_a_run_row_edited_in_either_store_is_broken_in_verify_and_refused_on_read(
    database: tuple[str, Execute], tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: str, words: str
) -> None:
    url, execute = database
    first, second = made_runs(tmp_path, url)
    execute(edit, (first,))
    code, said = verify(capsys, url, "--all")
    assert code != 0 and said["broken"] == 1
    [broken] = [r for r in said["runs"] if not r["verified"]]
    assert broken["runId"] == first and words in broken["broken"]["problem"]
    runs = default_runs(url)
    try:
        run = runs.store.get(first)
        assert run is not None and any(words in said for said in run.tampered)
        assert runs.store.get(second).tampered == ()  # type: ignore[union-attr]
    finally:
        runs.close()
