"""The notification outbox, in both stores (SQLite and a real PostgreSQL): written in the
same transaction as the run event that causes it, delivered in order per run and
target, claimed by one store at a time, a stuck run queued once per version, and a
database made before the outbox existed upgraded in place."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from handrail.model.runs import EventType, NewEvent, RunUpdate
from handrail.store import Conflict, RunStore, open_store
from handrail.store.base import NewNotification, Notification, Outcome
from handrail.store.rows import later
from handrail.store.schema import migrations
from tests.store.test_store import STORES, record

pytestmark = pytest.mark.slow


@pytest.fixture(params=STORES)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgresql":
        url: str = request.getfixturevalue("postgres_url")
        return url
    return f"sqlite:///{tmp_path / 'runs.db'}"


@pytest.fixture
def store(store_url: str) -> Iterator[RunStore]:
    opened = open_store(store_url)
    opened.put_source("h1", "wf", b"{}")
    yield opened
    opened.close()


def note(event: str, target: str = "https://receiver.test/hook") -> NewNotification:
    return NewNotification(target, event, {"type": event})


def deliver_all(store: RunStore, fail: frozenset[str] = frozenset()) -> list[str]:
    """Every due notification sent once: the events sent, those in `fail` refused."""
    sent: list[str] = []

    def send(n: Notification) -> Outcome:
        sent.append(n.event)
        return Outcome(False, "HTTP 503", later(3600)) if n.event in fail else Outcome(True)

    while store.deliver_due(send, 10):
        pass
    return sent


def test_notifications_are_written_with_their_event_and_not_at_all_when_the_write_conflicts(
    store: RunStore,
) -> None:
    run = store.create(record("r1"), [NewEvent(EventType.STARTED)], [note("run.started")])
    moved = store.update(run, RunUpdate(), [NewEvent(EventType.ABANDONED)], "ann", [note("run.abandoned")])
    with pytest.raises(Conflict):  # written against the version before `moved`
        store.update(run, RunUpdate(), [NewEvent(EventType.CONTEXT)], "bob", [note("run.lost")])
    with pytest.raises(Conflict):  # an update without events takes the other statement
        store.update(run, RunUpdate(accepted=3), [], "bob", [note("run.lost-too")])
    assert [n.event for n in store.notifications("r1")] == ["run.started", "run.abandoned"]
    assert [e.type for e in store.events("r1")] == ["started", "abandoned"]
    assert moved.version == 2


def test_a_later_notification_of_a_run_waits_while_an_earlier_one_to_the_same_target_is_undelivered(
    store: RunStore,
) -> None:
    run = store.create(
        record("r1"), [NewEvent(EventType.STARTED)], [note("first"), note("other", "https://b.test/")]
    )
    store.update(run, RunUpdate(), [NewEvent(EventType.CONTEXT)], "ann", [note("second")])
    other = store.create(record("r2"), [NewEvent(EventType.STARTED)], [note("r2-first")])
    assert other.id == "r2"
    # `first` fails: `second` (same run, same target) is not sent; the other target and run are
    assert sorted(deliver_all(store, fail=frozenset({"first"}))) == ["first", "other", "r2-first"]
    states = {n.event: (n.state, n.attempts, n.last_error) for n in store.notifications("r1")}
    assert states == {
        "first": ("pending", 1, "HTTP 503"),
        "other": ("delivered", 1, None),
        "second": ("pending", 0, None),
    }


def test_due_notifications_go_out_in_the_order_their_run_wrote_them(store: RunStore) -> None:
    run = store.create(record("r1"), [NewEvent(EventType.STARTED)], [note("e0")])
    for i in range(1, 6):
        run = store.update(
            run, RunUpdate(), [NewEvent(EventType.CONTEXT)], "ann", [note(f"e{i}a"), note(f"e{i}b")]
        )
    assert deliver_all(store) == ["e0", "e1a", "e1b", "e2a", "e2b", "e3a", "e3b", "e4a", "e4b", "e5a", "e5b"]
    assert {n.state for n in store.notifications("r1")} == {"delivered"}


def test_a_notification_given_up_is_marked_failed_and_no_longer_holds_the_ones_after_it(
    store: RunStore,
) -> None:
    run = store.create(record("r1"), [NewEvent(EventType.STARTED)], [note("doomed")])
    store.update(run, RunUpdate(), [NewEvent(EventType.CONTEXT)], "ann", [note("next")])
    store.deliver_due(lambda n: Outcome(False, "HTTP 410: gone"), 10)  # no retry time: given up
    assert deliver_all(store) == ["next"]
    assert [(n.event, n.state, n.last_error) for n in store.notifications("r1")] == [
        ("doomed", "failed", "HTTP 410: gone"),
        ("next", "delivered", None),
    ]


def test_a_claimed_notification_is_not_sent_by_a_second_store_on_the_same_database(store_url: str) -> None:
    first, second = open_store(store_url), open_store(store_url)
    try:
        first.put_source("h1", "wf", b"{}")
        first.create(record("r1"), [NewEvent(EventType.STARTED)], [note("only")])
        sending, release = threading.Event(), threading.Event()

        def slow(n: Notification) -> Outcome:
            sending.set()
            release.wait(10)
            return Outcome(True)

        worker = threading.Thread(target=first.deliver_due, args=(slow, 10))
        worker.start()
        assert sending.wait(10)
        assert second.deliver_due(lambda n: Outcome(True), 10) == 0  # held by the first
        release.set()
        worker.join(10)
        assert second.deliver_due(lambda n: Outcome(True), 10) == 0  # and then delivered
        assert [n.state for n in second.notifications("r1")] == ["delivered"]
    finally:
        first.close()
        second.close()


def test_an_idle_open_run_is_queued_stuck_once_per_version(store: RunStore) -> None:
    old = "2020-01-01T00:00:00.000Z"
    run = store.create(record("idle", at=old), [NewEvent(EventType.STARTED)])
    store.create(record("fresh", at=later(0)), [NewEvent(EventType.STARTED)])
    store.create(record("done", at=old, status="completed"), [NewEvent(EventType.STARTED)])
    before = later(-60)
    assert [r.id for r in store.idle_runs(before, 10)] == ["idle"]
    assert store.notify_idle(run, [note("run.stuck")]) == 1
    assert store.notify_idle(run, [note("run.stuck")]) == 0  # another server's scan: once is enough
    assert store.idle_runs(before, 10) == []
    moved = store.update(run, RunUpdate(), [NewEvent(EventType.CONTEXT)], "ann")
    assert [r.version for r in store.idle_runs(later(60), 10) if r.id == "idle"] == [moved.version]


def test_a_sqlite_database_made_before_the_outbox_opens_upgraded_with_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        for statement in migrations("sqlite")[0].split(";"):
            if statement.strip():
                db.execute(statement)
        db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
        db.execute("INSERT INTO schema_migrations VALUES (1, '2026-01-01T00:00:00.000Z')")
    old_store_upgrades(f"sqlite:///{path}")


def test_a_postgresql_database_made_before_the_outbox_opens_upgraded_with_its_runs(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute(migrations("postgresql")[0].encode())
        db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
        db.execute("INSERT INTO schema_migrations VALUES (1, '2026-01-01T00:00:00.000Z')")
        db.execute("INSERT INTO workflow_sources VALUES ('h1', 'wf', 'x', '2026-01-01T00:00:00.000Z')")
        db.execute(
            "INSERT INTO runs VALUES ('old', 'local', '/w', 'wf', '1', 'h1', 'g', 'active', '{}', '{}', 0, "
            "'2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 1, 0)"
        )
    old_store_upgrades(postgres_url, kept="old")


def old_store_upgrades(url: str, kept: str | None = None) -> None:
    store = open_store(url)
    try:
        if kept is None:
            store.put_source("h1", "wf", b"{}")
            store.create(record("old"), [NewEvent(EventType.STARTED)])
            kept = "old"
        run = store.get(kept)
        assert run is not None
        store.update(run, RunUpdate(), [NewEvent(EventType.ABANDONED)], "ann", [note("run.abandoned")])
        assert [n.event for n in store.notifications(kept)] == ["run.abandoned"]
    finally:
        store.close()
