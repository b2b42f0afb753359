"""The run store in PostgreSQL (psycopg 3, a psycopg_pool connection pool).

Same schema, migrations, rows and events as the SQLite store (store/schema.py).
Every call is one transaction on a pooled connection, committed before the call
returns, so an answer sent after it survives the replica being killed. The hot
calls are single statements in autocommit (a statement is its own transaction):
a read is one round trip, and an update with its events is one statement too (a
data-modifying WITH). An update checks the run's version in its WHERE clause: of
two replicas racing on one run, the second waits for the first's row lock, sees
the new version and matches no row (a `Conflict`), so adds no event. Migrations
run under a transaction-scoped advisory lock, so replicas starting together
migrate once.

Imported only for postgresql:// URLs: a SQLite server never loads psycopg.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from handrail.model.errors import StorageError
from handrail.model.runs import Event, NewEvent, RunRecord, RunUpdate
from handrail.store import claims, outbox, summary
from handrail.store.base import (
    STUCK_PART,
    ClaimFilter,
    Conflict,
    NewNotification,
    Send,
    written,
)
from handrail.store.chain import EVENT_COLUMNS, backfill
from handrail.store.gate_query import gate_events_query, gate_events_values
from handrail.store.kept_rows import KeptRows
from handrail.store.rows import (
    insert_events,
    move,
    now,
    read_events,
    run_record,
    seal_backfill,
)
from handrail.store.schema import MIGRATIONS_TABLE, SEAL_MIGRATION, migrations, newer_than_known

MIGRATIONS = migrations("postgresql")
MIGRATION_LOCK = 0x68616E64  # any constant: the advisory lock replicas take to migrate
CONNECT_TIMEOUT_S = 10
POOL_MAX = 10  # per replica; HTTP requests beyond it wait for a free connection


def redacted(url: str) -> str:
    """`url` without its password (and without query options, which may hold one)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = (f"{parts.username}@" if parts.username else "") + host
        if parts.port is not None:
            netloc += f":{parts.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        return url.split(":", 1)[0] + "://..."


def _scrub(message: str, url: str) -> str:
    """A driver message with any password the URL holds removed (libpq does not echo
    passwords, but a message must never depend on that)."""
    try:
        secret = urlsplit(url).password
    except ValueError:
        secret = None
    text = " ".join(str(message).split())
    return text.replace(secret, "***") if secret else text


class PostgresStore(KeptRows):
    dialect = "postgresql"
    _mark = "%s"
    # no rowid here: ties in the update time (same millisecond) go to the newer start
    _newest_first = "updated_at DESC, created_at DESC, id DESC"
    replicated = True  # several servers write to it: the run layer reads before each write

    def __init__(self, url: str, *, pool_max: int = POOL_MAX) -> None:
        self.url = redacted(url)
        self._secret_url = url
        conninfo = url  # libpq reads postgresql:// and postgres:// URLs as they are
        try:
            # the first connection is made directly, to report why it fails at once
            # (a pool only retries in the background until its timeout)
            with psycopg.connect(conninfo, connect_timeout=CONNECT_TIMEOUT_S) as db:
                self._migrate(db)
        except psycopg.Error as exc:
            raise self._error("cannot open the run database", exc) from None
        self._pool = ConnectionPool(
            conninfo,
            min_size=1,
            max_size=max(1, pool_max),
            kwargs={"connect_timeout": CONNECT_TIMEOUT_S, "autocommit": True},
            timeout=CONNECT_TIMEOUT_S,
            # a connection the server dropped (a restart, an idle timeout, a proxy) is
            # replaced when taken, instead of failing the call that took it
            check=ConnectionPool.check_connection,
            open=True,
            name="handrail-runs",
        )
        self._closed = threading.Event()

    def _error(self, what: str, exc: BaseException) -> StorageError:
        return StorageError(
            f"{what} {self.url}: {_scrub(str(exc), self._secret_url)}", {"database": self.url}
        )

    # -- schema --------------------------------------------------------------------
    def _migrate(self, db: psycopg.Connection[Any]) -> None:
        with db.transaction():
            if self._version(db) == len(MIGRATIONS):
                return  # the usual case: no lock, no write
        with db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            db.execute(MIGRATIONS_TABLE)
            current = self._version(db) or 0
            if current > len(MIGRATIONS):
                raise StorageError(
                    f"the run database {self.url} {newer_than_known(current)}",
                    {"database": self.url, "schemaVersion": current},
                )
            for version in range(current, len(MIGRATIONS)):
                db.execute(MIGRATIONS[version].encode())  # DDL is transactional here: all or none
                db.execute("INSERT INTO schema_migrations VALUES (%s, %s)", (version + 1, now()))
            backfill(db, "%s")
            if current < SEAL_MIGRATION:
                seal_backfill(db, "%s")

    @staticmethod
    def _version(db: psycopg.Connection[Any]) -> int | None:
        exists = db.execute("SELECT to_regclass('schema_migrations')").fetchone()
        if exists is None or exists[0] is None:
            return None
        row = db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
        return None if row is None or row[0] is None else int(row[0])

    @property
    def schema_version(self) -> int:
        with self._connection() as db:
            return self._version(db) or 0

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection in autocommit: each statement commits as it returns;
        several statements that belong together take `db.transaction()`."""
        try:
            with self._pool.connection() as db:
                yield db
        except (Conflict, StorageError):
            raise
        except PoolTimeout as exc:
            raise self._error("no connection to the run database", exc) from None
        except psycopg.Error as exc:
            raise self._error("the run database refused the call", exc) from None

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
        at, rows, head, sets, values, found, stats = move(run, change, events, actor, "%s")
        query = f"UPDATE runs SET {sets} WHERE id = %s AND version = %s"
        values += [run.id, run.version]
        if rows:
            # READ COMMITTED: a racing writer blocks on the row, then re-reads it and finds
            # the version moved, so it matches nothing and inserts nothing
            row = "(%s::integer, %s::text, %s::text, %s::text, %s::text, %s::text, %s::text)"
            # the statistics' summary rows join the same statement, written only if the run moved
            added, more = summary.typed_inserts(summary.keys_of(run), found, "moved")
            query = (
                f"WITH moved AS ({query} RETURNING id){''.join(', ' + a for a in added)} "
                f"INSERT INTO run_events ({EVENT_COLUMNS}) "
                "SELECT moved.id, e.seq, e.type, e.at, e.actor, e.step_id, e.data, e.hash "
                f"FROM moved, (VALUES {', '.join(row for _ in rows)}) "
                "AS e (seq, type, at, actor, step_id, data, hash)"
            )
            values += more + [v for r in rows for v in r.values()[1:]]
        if notifications or not durable:
            # the outbox rows join the same transaction; they are written only if the run moved
            with self._connection() as db, db.transaction():
                if not durable:  # the commit does not wait for the WAL flush
                    db.execute("SET LOCAL synchronous_commit = off")
                moved = db.execute(query.encode(), values).rowcount
                if moved != (len(rows) or 1):
                    raise Conflict(run.id)
                if notifications:
                    outbox.queue(db, run.id, run.version + 1, notifications, at, "%s")
            return written(run, change, at, len(events), head, stats)
        with self._connection() as db:
            moved = db.execute(query.encode(), values).rowcount
        if moved != (len(rows) or 1):
            raise Conflict(run.id)
        return written(run, change, at, len(events), head, stats)

    def claim(self, where: ClaimFilter, holder: str, until: str) -> RunRecord | None:
        """The picked row stays locked until the write commits; a claim racing this one,
        on this replica or another, skips it (SKIP LOCKED) and takes the next free branch."""
        at = now()
        query, values = claims.free_branch(where, at, "%s", "FOR UPDATE SKIP LOCKED")
        with self._connection() as db, db.transaction():
            row = db.execute(query.encode(), values).fetchone()
            if row is None:
                return None
            update, values, rows, after = claims.claim_write(run_record(row), holder, until, at, "%s")
            db.execute(update.encode(), values)
            insert_events(db, rows, "%s")
        return after

    def renew(self, run_id: str, holder: str, until: str) -> bool:
        query, values = claims.renewal(run_id, holder, until, now(), "%s")
        with self._connection() as db:
            return bool(db.execute(query.encode(), values).rowcount)

    def gate_events(self, run_id: str, recent: int) -> list[Event]:
        with self._connection() as db:
            rows = db.execute(gate_events_query("%s"), gate_events_values(run_id, recent)).fetchall()
        return read_events(sorted(rows, key=lambda row: int(row[0])))

    def aggregate(self, sql: str, values: Sequence[Any]) -> list[tuple[Any, ...]]:
        """One read-only query's rows (store/stats.py)."""
        with self._connection() as db:
            return db.execute(sql.encode(), list(values)).fetchall()

    # -- the notification outbox ------------------------------------------------------
    def notify_idle(self, run: RunRecord, notifications: Sequence[NewNotification]) -> int:
        added = 0
        with self._connection() as db, db.transaction():
            for row in outbox.rows(run.id, run.version, notifications, now(), STUCK_PART):
                added += db.execute(outbox.insert("%s"), row).rowcount
        return added

    def deliver_due(self, send: Send, limit: int) -> int:
        """The claim is the row lock (`FOR UPDATE SKIP LOCKED`), held while sending: another
        replica skips the row, and a replica that dies releases it with its connection."""
        with self._connection() as db, db.transaction():
            claimed = [
                outbox.notification(r)
                for r in db.execute(
                    outbox.due("%s") + "ORDER BY n.created_at LIMIT %s FOR UPDATE OF n SKIP LOCKED",
                    (now(), limit),
                ).fetchall()
            ]
            for n in claimed:
                outcome = send(n)
                db.execute(outbox.record("%s"), outbox.recorded(n, outcome, now()))
        return len(claimed)

    def _kept(self, write: bool = True) -> AbstractContextManager[psycopg.Connection[Any]]:
        return self._connection()

    @contextmanager
    def _together(self) -> Iterator[psycopg.Connection[Any]]:
        with self._connection() as db, db.transaction():
            yield db

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self._pool.close()
