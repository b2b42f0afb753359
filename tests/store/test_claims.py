"""The store's claim, for every store (SQLite, a real PostgreSQL): one holder per
branch even when two stores on one database (two replicas) claim at once, a lease that
ran out is free again, and a holder's write carries its renewed lease."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from handrail.model.runs import NewEvent, RunRecord, RunUpdate
from handrail.store import RunStore, open_store
from handrail.store.base import ClaimFilter
from handrail.store.chain import check_run
from handrail.store.rows import later
from tests.store.test_store import record

pytestmark = pytest.mark.slow

BRANCHES = 40
CLAIMERS = 16


@pytest.fixture(params=("postgresql", "sqlite"))
def two_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[RunStore, RunStore]]:
    """Two stores on one new database: what two replicas (or two processes) share."""
    url: str = (
        request.getfixturevalue("postgres_url")
        if request.param == "postgresql"
        else f"sqlite:///{tmp_path / 'runs.db'}"
    )
    first, second = open_store(url), open_store(url)
    yield first, second
    first.close()
    second.close()


def branches(store: RunStore, count: int, parent: str = "run_parent") -> list[RunRecord]:
    store.put_source("h1", "wf", b'{"id": "wf"}')
    store.create(record(parent), [NewEvent("started")])  # type: ignore[arg-type]
    made = []
    for index in range(count):
        branch = record(f"run_b{index:03}")._replace(parent_id=parent, parent_step="each", branch=index)
        made.append(store.create(branch, [NewEvent("started")]))  # type: ignore[arg-type]
    return made


def test_claims_racing_on_two_stores_of_one_database_give_each_branch_exactly_one_holder(
    two_stores: tuple[RunStore, RunStore],
) -> None:
    first, second = two_stores
    branches(first, BRANCHES)
    where = ClaimFilter(owner="local", parent_id="run_parent")

    def claim_all(n: int) -> list[str]:
        store = (first, second)[n % 2]
        got = []
        while (run := store.claim(where, f"agent-{n}", later(60))) is not None:
            got.append(run.id)
        return got

    with ThreadPoolExecutor(CLAIMERS) as pool:
        claims = list(pool.map(claim_all, range(CLAIMERS)))
    every = [run_id for got in claims for run_id in got]
    assert sorted(every) == [f"run_b{i:03}" for i in range(BRANCHES)]  # each once, none twice
    for n, got in enumerate(claims):
        for run_id in got:
            run = first.get(run_id)
            assert run is not None and run.holder == f"agent-{n}" and run.version == 2
            assert [e.type for e in first.events(run_id)] == ["started", "claimed"]
            assert check_run(first, run_id) is None  # the claimed event is chained on


def test_a_lease_that_ran_out_is_claimed_again_and_a_live_one_is_not(
    two_stores: tuple[RunStore, RunStore],
) -> None:
    store, other = two_stores
    branches(store, 2)
    where = ClaimFilter(owner="local")
    live = store.claim(where, "b", later(60))
    gone = store.claim(where, "a", later(-1))  # a lease already over
    assert gone is not None and live is not None and (live.branch, gone.branch) == (0, 1)
    again = other.claim(where, "c", later(60))
    assert again is not None and again.id == gone.id and again.holder == "c"
    [_, _, taken] = other.events(gone.id)
    assert taken.data["after"] == {"holder": "a", "leaseEnded": gone.lease_until}
    assert other.claim(where, "d", later(60)) is None
    assert store.claim(ClaimFilter(owner="someone else"), "e", later(60)) is None


def test_a_holders_write_carries_its_renewed_lease(two_stores: tuple[RunStore, RunStore]) -> None:
    store, _ = two_stores
    branches(store, 1)
    claimed = store.claim(ClaimFilter(owner="local"), "a", later(10))
    assert claimed is not None
    renewed = claimed._replace(lease_until=later(100))
    written = store.update(renewed, RunUpdate(accepted=1), [], "local")
    read = store.get(claimed.id)
    assert read is not None and read.lease_until == renewed.lease_until == written.lease_until
    assert read.holder == "a" and read.accepted == 1


def test_a_renewal_moves_only_the_live_lease_of_its_holder_on(two_stores: tuple[RunStore, RunStore]) -> None:
    store, other = two_stores
    branches(store, 2)
    live = store.claim(ClaimFilter(owner="local"), "a", later(10))
    gone = store.claim(ClaimFilter(owner="local"), "b", later(-1))
    assert live is not None and gone is not None
    assert other.renew(live.id, "someone else", later(100)) is False
    assert other.renew(gone.id, "b", later(100)) is False  # over: the branch is free, not renewed
    until = later(100)
    assert other.renew(live.id, "a", until) is True
    read = store.get(live.id)
    assert read is not None and read.lease_until == until and read.version == live.version


def test_a_branch_whose_lease_ran_out_is_claimed_before_a_later_one_nobody_held(
    two_stores: tuple[RunStore, RunStore],
) -> None:
    store, other = two_stores
    branches(store, 3)
    where = ClaimFilter(owner="local", parent_id="run_parent")
    lapsed = store.claim(where, "a", later(-1))  # branch 0, its lease already over
    assert lapsed is not None and lapsed.branch == 0
    taken = [other.claim(where, f"h{n}", later(60)) for n in range(4)]
    assert [t.branch if t is not None else None for t in taken] == [0, 1, 2, None]


def test_a_claim_picks_from_the_indexes_of_unheld_and_held_branches_not_by_walking_the_loop(
    tmp_path: Path,
) -> None:
    import sqlite3

    from handrail.store.claims import free_branch

    open_store(f"sqlite:///{tmp_path / 'runs.db'}").close()
    query, values = free_branch(ClaimFilter(owner="local", parent_id="run_parent"), later(0), "?")
    with sqlite3.connect(tmp_path / "runs.db") as db:
        plan = " | ".join(row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {query}", values))
    assert "INDEX runs_unheld_branches" in plan and "INDEX runs_held_branches" in plan, plan
    assert "runs_by_parent" not in plan, plan


def test_a_database_from_before_the_claim_indexes_gets_them_when_opened(tmp_path: Path) -> None:
    import sqlite3

    from handrail.store.schema import migrations, statements
    from handrail.store.stats import last_line

    every = migrations("sqlite")
    mine = next(i for i, m in enumerate(every) if "runs_unheld_branches" in m)
    with sqlite3.connect(tmp_path / "runs.db") as db:  # the schema just before the claim indexes
        db.create_function("last_line", 1, last_line, deterministic=True)  # as the store's migration has it
        db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
        for version, migration in enumerate(every[:mine], 1):
            for statement in statements(migration):
                db.execute(statement)
            db.execute("INSERT INTO schema_migrations VALUES (?, '2026-01-01T00:00:00.000Z')", (version,))
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    try:
        branches(store, 2)
        claimed = store.claim(ClaimFilter(owner="local"), "a", later(60))
        assert claimed is not None and claimed.branch == 0
    finally:
        store.close()
    with sqlite3.connect(tmp_path / "runs.db") as db:
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"runs_unheld_branches", "runs_held_branches"} <= names
