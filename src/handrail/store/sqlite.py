"""The run store in one SQLite file (stdlib sqlite3).

WAL with synchronous=FULL: a commit is on disk before the call returns, so an
answer sent after it survives `kill -9` and power loss. Writes take the database
lock up front (BEGIN IMMEDIATE) and check the run's version inside the
transaction, so two processes racing on one run serialise and the second sees
the first's write (a `Conflict`). The schema is versioned (store/schema.py, shared
with PostgreSQL), each version applied recorded in `schema_migrations`.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from handrail.errors import StorageError
from handrail.store.base import Conflict, Event, NewEvent, RunRecord, RunUpdate, written
from handrail.store.open import sqlite_url
from handrail.store.rows import _COLUMNS, _json, _load, _record, list_filter, now, run_row, update_sets
from handrail.store.schema import MIGRATIONS_TABLE, migrations, newer_than_known, statements

__all__ = ["MIGRATIONS", "SqliteStore", "now"]

BUSY_TIMEOUT_MS = 10_000

MIGRATIONS = migrations("sqlite")


class SqliteStore:
    def __init__(self, path: Path, *, url: str | None = None) -> None:
        self.url = url or sqlite_url(path)
        self.path = path
        try:
            # runs hold what agents wrote: readable by their owner only (SQLite gives its
            # -wal and -shm files the database file's permissions)
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
            # one connection per store, shared by the HTTP transport's threads under a lock
            self._db = sqlite3.connect(
                path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
            )
            self._lock = threading.Lock()
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = FULL")
            self._db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except sqlite3.Error as exc:
            raise StorageError(
                f"cannot open the run database {path}: {exc}", {"database": str(path)}
            ) from None
        except OSError as exc:
            raise StorageError(
                f"cannot create the run database {path}: {exc}", {"database": str(path)}
            ) from None

    # -- schema --------------------------------------------------------------------
    def _migrate(self) -> None:
        try:  # the usual case, a current schema, needs no write (and no fsync) at all
            if self._db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == len(
                MIGRATIONS
            ):
                return
        except sqlite3.OperationalError:
            pass  # a new database: no table yet
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

    @property
    def schema_version(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding the database lock from its start."""
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StorageError(f"the run database is unavailable: {exc}") from None
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            try:
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                db.execute("ROLLBACK")
                raise StorageError(f"the run database refused the write: {exc}") from None

    # -- sources -------------------------------------------------------------------
    def put_source(self, source_hash: str, workflow_id: str, document: bytes) -> None:
        with self._write() as db:
            db.execute(
                "INSERT OR IGNORE INTO workflow_sources VALUES (?, ?, ?, ?)",
                (source_hash, workflow_id, document, now()),
            )

    def get_source(self, source_hash: str) -> bytes | None:
        with self._lock:
            row = self._db.execute(
                "SELECT document FROM workflow_sources WHERE hash = ?", (source_hash,)
            ).fetchone()
        return bytes(row[0]) if row else None

    # -- runs ----------------------------------------------------------------------
    def create(self, run: RunRecord, events: Sequence[NewEvent]) -> RunRecord:
        with self._write() as db:
            db.execute(f"INSERT INTO runs VALUES ({', '.join(['?'] * 15)})", run_row(run, len(events)))
            self._append(db, run.id, 0, events, run.owner, run.created_at)
        return replace(run, events=len(events))

    def update(self, run: RunRecord, change: RunUpdate, events: Sequence[NewEvent], actor: str) -> RunRecord:
        at = now()
        sets, values = update_sets(change, at, len(events), "?")
        with self._write() as db:
            moved = db.execute(
                f"UPDATE runs SET {sets} WHERE id = ? AND version = ?",
                (*values, run.id, run.version),
            ).rowcount
            if moved != 1:
                raise Conflict(run.id)
            # the version check above makes `run.events` the log's length as committed
            self._append(db, run.id, run.events, events, actor, at)
        return written(run, change, at, len(events))

    @staticmethod
    def _append(
        db: sqlite3.Connection, run_id: str, last: int, events: Sequence[NewEvent], actor: str, at: str
    ) -> None:
        for i, e in enumerate(events, 1):
            db.execute(
                "INSERT INTO run_events VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run_id, last + i, e.type, at, actor, e.step_id, _json(e.data)),
            )

    def get(self, run_id: str) -> RunRecord | None:
        with self._lock:
            row = self._db.execute(f"SELECT {_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
        return _record(row) if row else None

    def list_runs(
        self,
        *,
        workspace: str | None = None,
        statuses: Sequence[str] | None = None,
        owner: str | None = None,
        limit: int = 100,
        workflow_id: str | None = None,
        text: str | None = None,
    ) -> list[RunRecord]:
        clause, values = list_filter(workspace, statuses, owner, "?", workflow_id, text)
        query = f"SELECT {_COLUMNS} FROM runs {clause} ORDER BY updated_at DESC, rowid DESC LIMIT ?"
        with self._lock:
            rows = self._db.execute(query, (*values, limit)).fetchall()
        return [_record(r) for r in rows]

    def events(self, run_id: str) -> list[Event]:
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, type, at, actor, step_id, data FROM run_events WHERE run_id = ? ORDER BY seq",
                (run_id,),
            ).fetchall()
        return [Event(seq, kind, at, actor, step, _load(data)) for seq, kind, at, actor, step, data in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()
