"""The run store contract, for every store: SQLite and PostgreSQL (a real server the
tests start, see conftest.py), each test run on both."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.model.errors import StorageError
from handrail.model.runs import NewEvent, RunRecord, RunUpdate
from handrail.store import Conflict, RunStore, open_store
from handrail.store.chain import check_run
from handrail.store.sqlite import MIGRATIONS, SqliteStore
from tests.postgres import PASSWORD, Cluster

pytestmark = pytest.mark.slow

STORES = ("postgresql", "sqlite")


@pytest.fixture(params=STORES)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty database of each kind."""
    if request.param == "postgresql":
        url: str = request.getfixturevalue("postgres_url")
        return url
    return f"sqlite:///{tmp_path / 'runs.db'}"


@pytest.fixture
def store(store_url: str) -> Iterator[RunStore]:
    opened = open_store(store_url)
    yield opened
    opened.close()


def record(
    run_id: str, *, workspace: str = "/w", status: str = "active", at: str = "2026-01-01T00:00:00.000Z"
) -> RunRecord:
    return RunRecord(
        id=run_id,
        owner="local",
        workspace=workspace,
        workflow_id="wf",
        workflow_version="1.0.0",
        source_hash="h1",
        goal="a goal",
        status=status,
        context={"k": 1},
        position={"step": {"id": "s1", "title": "S1"}, "completedSteps": []},
        accepted=0,
        created_at=at,
        updated_at=at,
        version=1,
    )


def test_a_created_run_reads_back_with_its_first_events(store: RunStore) -> None:
    store.put_source("h1", "wf", b'{"id": "wf"}')
    store.put_source("h1", "wf", b'{"id": "wf"}')  # idempotent
    store.create(record("r1"), [NewEvent("started", data={"goal": "a goal"})])
    run = store.get("r1")
    assert run is not None and run.current_step == {"id": "s1", "title": "S1"} and run.context == {"k": 1}
    [event] = store.events("r1")
    assert (event.seq, event.type, event.actor, event.data) == (1, "started", "local", {"goal": "a goal"})
    assert store.get_source("h1") == b'{"id": "wf"}' and store.get_source("nope") is None
    assert store.get("r2") is None


def test_an_update_not_waiting_for_the_disk_is_the_same_write_and_the_next_one_is_durable(
    store: RunStore,
) -> None:
    store.put_source("h1", "wf", b"{}")
    first = store.create(record("r1"), [NewEvent("started")])
    gate = [NewEvent("gate", "s1", {"decision": "deny"})]
    refused = store.update(first, RunUpdate(), gate, "gate", durable=False)
    with pytest.raises(Conflict):
        store.update(first, RunUpdate(), [NewEvent("gate", "s1")], "gate", durable=False)
    store.update(refused, RunUpdate(accepted=1), [NewEvent("accepted", "s1", {"output": "x"})], "local")
    assert [(e.seq, e.type) for e in store.events("r1")] == [(1, "started"), (2, "gate"), (3, "accepted")]
    assert check_run(store, "r1") is None, "chained as every write"
    if isinstance(store, SqliteStore):  # the writer is back at FULL for the accepted output
        assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 2


def test_an_update_applies_only_at_the_version_it_read(store: RunStore) -> None:
    store.put_source("h1", "wf", b"{}")
    first = store.create(record("r1"), [NewEvent("started")])
    written = store.update(
        first, RunUpdate(accepted=1), [NewEvent("accepted", "s1", {"output": "x"})], "local"
    )
    assert written.version == 2 and written.accepted == 1
    with pytest.raises(Conflict):
        store.update(first, RunUpdate(accepted=5), [NewEvent("accepted", "s1")], "local")
    assert [e.type for e in store.events("r1")] == ["started", "accepted"], "a refused write leaves no event"
    run = store.get("r1")
    assert run is not None and run.accepted == 1
    assert run == written, "the store returns the run as it wrote it"


def test_runs_are_listed_newest_first_by_workspace_status_and_owner(store: RunStore) -> None:
    store.put_source("h1", "wf", b"{}")
    store.create(record("old", at="2026-01-01T00:00:00.000Z"), [])
    store.create(record("new", at="2026-01-02T00:00:00.000Z"), [])
    store.create(record("done", status="completed"), [])
    store.create(record("there", workspace="/elsewhere"), [])
    assert [r.id for r in store.list_runs(workspace="/w", statuses=["active"])] == ["new", "old"]
    assert [r.id for r in store.list_runs(statuses=["completed"])] == ["done"]
    assert store.list_runs(owner="somebody-else") == []
    assert len(store.list_runs(limit=2)) == 2


def test_a_child_run_keeps_its_parent_step_branch_and_lease_and_is_listed_by_parent(
    store: RunStore,
) -> None:

    store.put_source("h1", "wf", b"{}")
    store.create(record("parent"), [])
    until = "2026-01-01T00:05:00.000Z"
    for n in (1, 0):
        held = {"holder": "ann", "lease_until": until} if n else {}
        store.create(
            record(f"branch-{n}")._replace(parent_id="parent", parent_step="each-file", branch=n, **held), []
        )
    child = store.get("branch-1")
    assert child is not None
    assert (child.parent_id, child.parent_step, child.branch, child.holder, child.lease_until) == (
        "parent",
        "each-file",
        1,
        "ann",
        until,
    )
    assert sorted(r.id for r in store.list_runs(parent_id="parent")) == ["branch-0", "branch-1"]
    parent = store.get("parent")
    assert parent is not None and parent.parent_id is None and parent.branch is None


def test_a_listing_filtered_by_workflow_and_text_finds_a_run_older_than_the_500_newest(
    store: RunStore,
) -> None:

    store.put_source("h1", "wf", b"{}")
    store.create(record("old-one")._replace(workflow_id="rare", goal="Fix the 50% Login_bug"), [])
    for n in range(600):
        store.create(record(f"r{n:03}", at=f"2026-02-01T00:{n // 60:02}:{n % 60:02}.000Z"), [])
    assert "old-one" not in [r.id for r in store.list_runs(limit=500)]
    assert [r.id for r in store.list_runs(workflow_id="rare", limit=500)] == ["old-one"]
    assert [r.id for r in store.list_runs(text="LOGIN_BUG", limit=500)] == ["old-one"]  # any case
    assert [r.id for r in store.list_runs(text="50% l", limit=500)] == ["old-one"]
    assert store.list_runs(text="50_", limit=500) == []  # `_` and `%` are literal, not wildcards
    assert [r.id for r in store.list_runs(text="old-o", limit=500)] == ["old-one"]  # the run id too
    assert store.list_runs(workflow_id="rare", statuses=["completed"]) == []


def test_sqlite_runs_in_wal_with_full_sync_and_records_its_migrations(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "runs.db")
    try:
        assert store.schema_version == len(MIGRATIONS)
        with sqlite3.connect(tmp_path / "runs.db") as db:
            assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            versions = [v for (v,) in db.execute("SELECT version FROM schema_migrations")]
            assert versions == list(range(1, len(MIGRATIONS) + 1))
    finally:
        store.close()
    SqliteStore(tmp_path / "runs.db").close()  # opening again migrates nothing twice


def test_sqlite_refuses_a_database_from_a_newer_handrail(tmp_path: Path) -> None:
    SqliteStore(tmp_path / "runs.db").close()
    with sqlite3.connect(tmp_path / "runs.db") as db:
        db.execute("INSERT INTO schema_migrations VALUES (99, 'later')")
    with pytest.raises(StorageError, match="schema version 99, newer than this handrail knows"):
        SqliteStore(tmp_path / "runs.db")


def test_database_urls_name_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="PostgreSQL URL is malformed") as bad:
        open_store("postgresql://u:hunter2@h:port/db")
    assert "hunter2" not in bad.value.message + repr(bad.value.data)
    with pytest.raises(StorageError, match="must start with sqlite:///"):
        open_store("mysql://h/db")
    with pytest.raises(StorageError, match="names a host"):
        open_store("sqlite://somehost/db")
    (tmp_path / "file").write_text("x")
    with pytest.raises(StorageError, match="cannot"):
        open_store(f"sqlite:///{tmp_path / 'file' / 'runs.db'}")


def test_values_orjson_cannot_hold_are_stored_exactly(store: RunStore) -> None:
    store.put_source("h1", "wf", b"{}")
    odd = {"big": 2**70, "text": "lone \udc80 surrogate", "plain": "é"}
    first = store.create(record("r1"), [NewEvent("started", data={"context": odd})])
    store.update(first, RunUpdate(context=odd), [], "local")
    run = store.get("r1")
    assert run is not None and run.context == odd
    assert store.events("r1")[0].data == {"context": odd}


def test_a_new_sqlite_database_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'home' / 'runs.db'}")
    try:
        store.put_source("h1", "wf", b"{}")  # a write: the -wal file exists now
        assert (tmp_path / "home").stat().st_mode & 0o777 == 0o700
        for name in ("runs.db", "runs.db-wal"):
            assert (tmp_path / "home" / name).stat().st_mode & 0o777 == 0o600, name
    finally:
        store.close()


def test_two_connections_updating_one_run_from_the_same_read_apply_exactly_one(store_url: str) -> None:
    one, two = open_store(store_url), open_store(store_url)
    try:
        one.put_source("h1", "wf", b"{}")
        created = one.create(record("r1"), [NewEvent("started")])
        read_by_two = two.get("r1")
        assert read_by_two is not None
        one.update(created, RunUpdate(accepted=1), [NewEvent("accepted", "s1")], "local")
        with pytest.raises(Conflict):
            two.update(read_by_two, RunUpdate(accepted=1), [NewEvent("accepted", "s1")], "local")
        assert [e.seq for e in two.events("r1")] == [1, 2]
    finally:
        one.close()
        two.close()


def test_postgresql_records_the_same_migrations_and_refuses_a_newer_schema(postgres_url: str) -> None:
    import psycopg

    from handrail.store.postgres import PostgresStore

    store = PostgresStore(postgres_url)
    try:
        assert store.schema_version == len(MIGRATIONS)
    finally:
        store.close()
    PostgresStore(postgres_url).close()  # opening again migrates nothing twice
    with psycopg.connect(postgres_url, autocommit=True) as db:
        versions = [v for (v,) in db.execute("SELECT version FROM schema_migrations")]
        assert versions == list(range(1, len(MIGRATIONS) + 1))
        db.execute("INSERT INTO schema_migrations VALUES (99, 'later')")
    with pytest.raises(StorageError, match="schema version 99, newer than this handrail knows"):
        open_store(postgres_url)


def test_replicas_opening_a_new_postgresql_database_together_migrate_it_once(postgres_url: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(lambda _: open_store(postgres_url), range(4)))
    try:
        stores[0].put_source("h1", "wf", b"{}")
        stores[1].create(record("r1"), [NewEvent("started")])
        assert stores[3].get("r1") is not None
    finally:
        for opened in stores:
            opened.close()


def test_a_postgresql_error_never_shows_the_password(postgres_cluster: Cluster) -> None:
    url = postgres_cluster.url(password="wrong-" + PASSWORD)
    with pytest.raises(StorageError, match="cannot open the run database") as refused:
        open_store(url)
    shown = refused.value.message + repr(refused.value.data)
    assert "password authentication failed" in shown
    assert PASSWORD not in shown and postgres_cluster.url() not in shown
    assert refused.value.data == {
        "database": f"postgresql://handrail@127.0.0.1:{postgres_cluster.port}/postgres"
    }


def test_postgresql_urls_are_accepted_in_both_spellings(postgres_cluster: Cluster) -> None:
    for url in (postgres_cluster.url(), postgres_cluster.url().replace("postgresql://", "postgres://", 1)):
        opened = open_store(url)
        try:
            assert opened.list_runs(owner="nobody") == []
            assert PASSWORD not in opened.url
        finally:
            opened.close()


def test_the_sqlite_path_never_imports_psycopg(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from handrail.store import open_store; "
        f"s = open_store('sqlite:///{tmp_path / 'runs.db'}'); s.put_source('h', 'w', b'{{}}'); "
        "import handrail.cli, handrail.service.core; "
        "print(sorted(m for m in sys.modules if m.startswith('psycopg')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_without_postgresql_its_tests_skip_saying_why_except_under_ci_where_they_fail() -> None:
    from tests.conftest import require_postgres

    require_postgres(None, {"CI": "true"})  # found: nothing to say
    with pytest.raises(pytest.skip.Exception, match="initdb was not found"):
        require_postgres("initdb was not found", {})
    with pytest.raises(pytest.fail.Exception, match="CI must run the PostgreSQL tests: initdb was not found"):
        require_postgres("initdb was not found", {"CI": "true"})


def test_a_listing_after_an_id_pages_through_every_run_in_id_order_whatever_their_times(
    store: RunStore,
) -> None:
    store.put_source("h1", "wf", b"{}")
    for n in range(7):  # ids and times in opposite orders, several at one millisecond
        store.create(
            record(f"p{n}", status="awaiting_approval", at=f"2026-03-0{7 - n // 2}T00:00:00.000Z"), []
        )
    store.create(record("p9"), [])  # another status: left out
    pages, after = [], ""
    for _ in range(5):  # three pages are enough; more would be a listing that does not move on
        page = [r.id for r in store.list_runs(statuses=["awaiting_approval"], after_id=after, limit=3)]
        pages.append(page)
        if len(page) < 3:
            break
        after = page[-1]
    assert pages == [["p0", "p1", "p2"], ["p3", "p4", "p5"], ["p6"]]
