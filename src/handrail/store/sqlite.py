"""The run store in one SQLite file (stdlib sqlite3).

WAL with synchronous=FULL: a commit is on disk before the call returns, so an
answer sent after it survives `kill -9` and power loss (an update not `durable`, the
gate's refusal records, survives `kill -9` only). Writes take the database
lock up front (BEGIN IMMEDIATE) and check the run's version inside the
transaction, so two processes racing on one run serialise and the second sees
the first's write (a `Conflict`). A write waits for the lock at most
`BUSY_TIMEOUT_S` (less when the request has less time left), then fails naming
the lock. Reads run on connections of their own, one per thread: WAL readers
never wait for a writer. The schema is versioned (store/schema.py, shared with
PostgreSQL), each version applied recorded in `schema_migrations`.

A damaged file is never written to: it is checked when opened (`PRAGMA quick_check`;
a reader of a current file opens no writing connection and checks nothing until it
writes, and meets damage in the pages it reads); a call that finds damage later marks
the store unusable. Every failure is a StorageError naming the file and what to do.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from handrail.internals import Lock, local  # threading's, without loading threading
from handrail.model.errors import StorageError
from handrail.model.runs import Event, NewEvent, RunRecord, RunUpdate
from handrail.store import outbox
from handrail.store.base import (
    STUCK_PART,
    ClaimFilter,
    Conflict,
    NewNotification,
    Send,
    written,
)
from handrail.store.chain import backfill
from handrail.store.gate_query import gate_events_query, gate_events_values
from handrail.store.gate_window import NEWER_QUERY, GateWindows
from handrail.store.kept_rows import KeptRows
from handrail.store.rows import (
    insert_events,
    later,
    move,
    now,
    read_events,
    run_record,
    seal_backfill,
)
from handrail.store.schema import MIGRATIONS_TABLE, SEAL_MIGRATION, migrations, newer_than_known, statements
from handrail.store.sqlite_failures import DAMAGED, damaged, failed, locked, uncreated
from handrail.store.urls import sqlite_url

if TYPE_CHECKING:
    from pathlib import Path

# what only a server's calls need (claims, passkeys, dashboard sessions, statistics) is
# imported where it is used, so that a gate hook, which reads one run, does not load it
__all__ = ["MIGRATIONS", "SqliteStore", "now"]


def _last_line(text: str | None) -> str | None:
    """SQL's `last_line`, for the statistics and their migration (store/stats.py)."""
    from handrail.store.stats import last_line  # lazy: a hook's read does not call it

    return last_line(text)


def _time_left() -> float | None:
    """Seconds left to the running request's budget. No budget runs in a process that
    never loaded handrail.model.budget (a gate hook), which then need not load it."""
    running = sys.modules.get("handrail.model.budget")
    left: float | None = None if running is None else running.remaining()
    return left


CLAIM_S = 30.0  # how long claimed notifications are another process's (a batch of sends takes less)
BUSY_TIMEOUT_S = 5.0  # how long a write waits for another process's write lock
WRITER_PRAGMAS = ("PRAGMA journal_mode = WAL", "PRAGMA synchronous = FULL", "PRAGMA foreign_keys = ON")

MIGRATIONS = migrations("sqlite")


class _Reader(local):
    """This thread's reading connection, once opened."""

    db: sqlite3.Connection | None = None

    def keep(self, db: sqlite3.Connection) -> None:
        self.db = db


class SqliteStore(KeptRows):
    dialect = "sqlite"
    _mark = "?"
    _newest_first = "updated_at DESC, rowid DESC"

    def __init__(
        self,
        path: Path | str,
        *,
        url: str | None = None,
        busy_timeout: float = BUSY_TIMEOUT_S,
        reading: bool = False,
    ) -> None:
        self.url = url or sqlite_url(path)
        self.path = str(path)
        self.busy_timeout = busy_timeout
        self._damaged: StorageError | None = None
        self._readers: list[sqlite3.Connection] = []
        self._reader = _Reader()
        self._lock = Lock()  # the one writing connection, shared by the HTTP threads
        self._opened = Lock()  # the list of readers (never the writer's lock: it waits)
        self._windows = GateWindows()
        self._checked = False  # whether the whole file was checked: before the first write
        try:
            # runs hold what agents wrote: readable by their owner only (SQLite gives its
            # -wal and -shm files the database file's permissions)
            os.makedirs(os.path.dirname(self.path) or ".", mode=0o700, exist_ok=True)
            os.close(os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600))
        except OSError as exc:
            raise uncreated(self.path, exc) from None
        self._db: sqlite3.Connection | None = None  # the writing connection, opened by `_writer`
        try:
            # a whole-file check guards what is written; a reader at the current schema writes
            # nothing, and SQLite refuses the damaged pages it reads (0.5 s saved per 200 MB):
            # its check, and its writing connection, wait for a first write, should it make one
            if not (reading and self._current(self._reader_db())):
                self._writer()
                self._check()
                self._migrate()
        except StorageError:
            self.close()
            raise
        except sqlite3.Error as exc:
            self.close()
            raise self._failed(exc, "cannot open the run database") from None

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=self.busy_timeout
        )
        db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        db.create_function("last_line", 1, _last_line, deterministic=True)  # stats and their migration
        return db

    def _writer(self) -> sqlite3.Connection:
        """The writing connection, opened on first use: a reader of a current file may never."""
        if self._db is None:
            db = self._connect()
            for pragma in WRITER_PRAGMAS:
                db.execute(pragma)
            self._db = db
        return self._db

    def _check(self) -> None:
        """Refuse a damaged file before anything is written to it (about 2 ms per MB)."""
        found = [row[0] for row in self._writer().execute("PRAGMA quick_check(3)").fetchall()]
        if found != ["ok"]:
            raise self._damage("; ".join(str(f) for f in found))
        self._checked = True

    # -- failures (store/sqlite_failures.py) ---------------------------------------
    def _damage(self, what: str) -> StorageError:
        """The store's answer, from now on, to every call: the file is damaged."""
        if self._damaged is None:
            self._damaged = damaged(self.path, what)
        return self._damaged

    def _failed(self, exc: sqlite3.Error, doing: str = "the run database refused the call") -> StorageError:
        name = getattr(exc, "sqlite_errorname", "") or ""
        if name.startswith(DAMAGED):
            return self._damage(str(exc))
        return failed(self.path, exc, doing, self.busy_timeout)

    def _usable(self) -> None:
        if self._damaged is not None:
            raise self._damaged

    # -- schema --------------------------------------------------------------------
    def _current(self, db: sqlite3.Connection) -> bool:
        try:
            version = db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
            return False
        return bool(version == len(MIGRATIONS))

    def _migrate(self) -> None:
        # the usual case, a current schema, needs no write (and no fsync) at all
        if self._current(self._writer()):
            return
        with self._write() as db:
            db.execute(MIGRATIONS_TABLE)
            row = db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
            current = row[0] or 0
            if current > len(MIGRATIONS):
                raise StorageError(
                    f"the run database {self.path} {newer_than_known(current)}",
                    {"database": str(self.path), "schemaVersion": current},
                )
            for version in range(current, len(MIGRATIONS)):
                for statement in statements(MIGRATIONS[version]):
                    db.execute(statement)
                db.execute("INSERT INTO schema_migrations VALUES (?, ?)", (version + 1, now()))
            backfill(db, "?")
            if current < SEAL_MIGRATION:
                seal_backfill(db, "?")

    @property
    def schema_version(self) -> int:
        with self._read() as db:
            row = db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """This thread's reading connection: a WAL reader sees the last commit and never
        waits for a writer, here or in another process."""
        self._usable()
        try:
            yield self._reader_db()
        except sqlite3.Error as exc:
            raise self._failed(exc) from None

    def _reader_db(self) -> sqlite3.Connection:
        db = self._reader.db
        if db is None:
            db = self._connect()
            db.execute("PRAGMA query_only = ON")
            with self._opened:
                self._readers.append(db)
            self._reader.keep(db)
        return db

    @contextmanager
    def _write(self, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding the database lock from its start. Waiting for the
        lock, here and in other processes, takes at most the busy timeout in all. Not
        `durable`: committed without the WAL's fsync (see `RunStore.update`)."""
        self._usable()
        wait = self.busy_timeout
        left = _time_left()
        if left is not None:
            wait = min(wait, max(0.0, left - 0.25))  # answer within the request's budget
        deadline = time.monotonic() + wait
        if not self._lock.acquire(timeout=wait):
            raise locked(self.path, self.busy_timeout)
        try:
            try:
                db = self._writer()
                if not self._checked:  # opened for reading, and writing after all
                    self._check()
                db.execute(f"PRAGMA busy_timeout = {int(max(0.0, deadline - time.monotonic()) * 1000)}")
                if not durable:
                    db.execute("PRAGMA synchronous = NORMAL")
                db.execute("BEGIN IMMEDIATE")
                yield db
                db.execute("COMMIT")
            except BaseException as exc:
                opened = self._db  # None when the writing connection could not be opened
                if opened is not None and opened.in_transaction:  # SQLite may have rolled back already
                    with contextlib.suppress(sqlite3.Error):
                        opened.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._failed(exc, "the run database refused the write") from None
                raise
            finally:
                if not durable and self._db is not None:
                    with contextlib.suppress(sqlite3.Error):
                        self._db.execute("PRAGMA synchronous = FULL")
        finally:
            self._lock.release()

    # -- runs ----------------------------------------------------------------------
    def update(
        self,
        run: RunRecord,
        change: RunUpdate,
        events: Sequence[NewEvent],
        actor: str,
        notifications: Sequence[NewNotification] = (),
        durable: bool = True,
    ) -> RunRecord:
        from handrail.store import summary  # lazy: a hook's read writes no statistics

        at, rows, head, sets, values, found, stats = move(run, change, events, actor, "?")
        with self._write(durable) as db:
            moved = db.execute(
                f"UPDATE runs SET {sets} WHERE id = ? AND version = ?",
                (*values, run.id, run.version),
            ).rowcount
            if moved != 1:
                raise Conflict(run.id)
            insert_events(db, rows, "?")
            summary.insert(db, summary.keys_of(run), found, "?")
            if notifications:
                outbox.queue(db, run.id, run.version + 1, notifications, at, "?")
        return written(run, change, at, len(events), head, stats)

    def claim(self, where: ClaimFilter, holder: str, until: str) -> RunRecord | None:
        """Inside the write transaction: no other claim, here or in another process, runs
        between the pick and the write."""
        from handrail.store import claims  # lazy: what a hook never calls

        at = now()
        query, values = claims.free_branch(where, at, "?")
        with self._write() as db:
            row = db.execute(query, values).fetchone()
            if row is None:
                return None
            update, values, rows, after = claims.claim_write(run_record(row), holder, until, at, "?")
            db.execute(update, values)
            insert_events(db, rows, "?")
        return after

    def renew(self, run_id: str, holder: str, until: str) -> bool:
        from handrail.store import claims  # lazy: what a hook never calls

        query, values = claims.renewal(run_id, holder, until, now(), "?")
        with self._write() as db:
            return bool(db.execute(query, values).rowcount)

    def gate_events(self, run_id: str, recent: int) -> list[Event]:
        """As `RunStore.gate_events`; a run read before is read on from its newest event
        kept (store/gate_window.py), so a hook's cost does not follow the log's length."""
        with self._read() as db:
            newest = self._windows.last(run_id, recent)
            if newest is not None:
                newer = db.execute(NEWER_QUERY, (run_id, newest.seq, recent + 2)).fetchall()
                window = self._windows.extend(run_id, recent, newer)
                if window is not None:
                    return window
            rows = db.execute(gate_events_query("?"), gate_events_values(run_id, recent)).fetchall()
        rows.sort(key=lambda row: int(row[0]))
        events = read_events(rows)
        self._windows.put(run_id, recent, rows, events)
        return events

    def aggregate(self, sql: str, values: Sequence[Any]) -> list[tuple[Any, ...]]:
        """One read-only query's rows (store/stats.py)."""
        with self._read() as db:
            return db.execute(sql, tuple(values)).fetchall()

    # -- the notification outbox ------------------------------------------------------
    def notify_idle(self, run: RunRecord, notifications: Sequence[NewNotification]) -> int:
        with self._write() as db:
            before = db.total_changes
            db.executemany(
                outbox.insert("?"), outbox.rows(run.id, run.version, notifications, now(), STUCK_PART)
            )
            return db.total_changes - before

    def deliver_due(self, send: Send, limit: int) -> int:
        """A claim is a lease (`CLAIM_S`): other processes on the same file skip the row
        until it ends, so a server killed while sending leaves it to the next one."""
        at = now()
        with self._read() as db:  # the usual answer, nothing due, takes no write lock
            if db.execute(outbox.due("?") + "LIMIT 1", (at,)).fetchone() is None:
                return 0
        with self._write() as db:
            claimed = [
                outbox.notification(r)
                for r in db.execute(
                    outbox.due("?") + "AND (n.claimed_until IS NULL OR n.claimed_until < ?) "
                    "ORDER BY n.created_at LIMIT ?",
                    (at, at, limit),
                ).fetchall()
            ]
            until = later(CLAIM_S)
            db.executemany(
                "UPDATE notifications SET claimed_until = ? WHERE id = ?", [(until, n.id) for n in claimed]
            )
        for n in claimed:
            outcome = send(n)
            with self._write() as db:
                db.execute(outbox.record("?"), outbox.recorded(n, outcome, now()))
        return len(claimed)

    def _kept(self, write: bool = True) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._write() if write else self._read()

    def _together(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._write()

    def close(self) -> None:
        with self._lock, self._opened:
            for db in (*self._readers, getattr(self, "_db", None)):
                if db is not None:
                    db.close()
            self._readers.clear()
