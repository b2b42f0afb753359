"""A run and its events as read, the workflow sources kept, the dashboard's sessions
(store/sessions.py), passkey challenges (store/challenges.py), the people's passkeys
(store/passkeys.py) and a run's notifications (store/outbox.py), the events a recap
shows, the audit trail's and the idle runs, written and read the same way by both
stores: the same SQL with the driver's placeholder, one transaction a call. A store
names its placeholder, the order of its newest runs, the transaction it writes in and
the one several statements share (a new run's); the rest is here once."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Unpack

from handrail.store import outbox
from handrail.store.base import LIST_LIMIT, RunFilter
from handrail.store.chain import chained_rows, new_head
from handrail.store.rows import (
    EVENTS_QUERY,
    EVENTS_SINCE_QUERY,
    RUN_COLUMNS,
    insert_events,
    insert_run,
    list_filter,
    list_order,
    now,
    read_events,
    read_linked,
    run_record,
)
from handrail.store.shown_query import shown_events_query, shown_events_values

if TYPE_CHECKING:  # loaded when a session is kept, never by a gate hook's read
    from handrail.model.runs import Event, NewEvent, RunRecord
    from handrail.store.base import NewNotification, Notification
    from handrail.store.passkeys import Passkey
    from handrail.store.sessions import KeptSession


class KeptRows:
    _mark: str  # `?` for sqlite3, `%s` for psycopg
    _newest_first: str  # the ORDER BY of `list_runs` when the filters ask for none

    def _kept(self, write: bool = True) -> AbstractContextManager[Any]:
        """One transaction on the store's database: a write, or a read that takes no lock."""
        raise NotImplementedError

    def _together(self) -> AbstractContextManager[Any]:
        """One transaction of several statements, committed whole or not at all."""
        raise NotImplementedError

    def create(
        self, run: RunRecord, events: Sequence[NewEvent], notifications: Sequence[NewNotification] = ()
    ) -> RunRecord:
        from handrail.store import summary  # lazy: a hook's read writes no statistics

        rows = chained_rows(run.id, 0, None, events, run.owner, run.created_at)
        head = new_head(rows, None)
        found, stats = summary.plan(None, rows)
        with self._together() as db:
            db.execute(*insert_run(run, len(events), head, self._mark, stats))
            insert_events(db, rows, self._mark)
            summary.insert(db, summary.keys_of(run), found, self._mark)
            if notifications:
                outbox.queue(db, run.id, run.version, notifications, run.created_at, self._mark)
        return run._replace(events=len(events), head=head, stats=stats)

    def put_source(self, source_hash: str, workflow_id: str, document: bytes) -> None:
        marks = ", ".join([self._mark] * 4)
        with self._kept() as db:
            db.execute(
                f"INSERT INTO workflow_sources VALUES ({marks}) ON CONFLICT (hash) DO NOTHING",
                (source_hash, workflow_id, document, now()),
            )

    def get_source(self, source_hash: str) -> bytes | None:
        with self._kept(write=False) as db:
            query = f"SELECT document FROM workflow_sources WHERE hash = {self._mark}"
            row = db.execute(query, (source_hash,)).fetchone()
        return bytes(row[0]) if row else None

    def get(self, run_id: str) -> RunRecord | None:
        with self._kept(write=False) as db:
            row = db.execute(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = {self._mark}", (run_id,)).fetchone()
        return run_record(row) if row else None

    def list_runs(self, **filters: Unpack[RunFilter]) -> list[RunRecord]:
        clause, values = list_filter(filters, self._mark)
        order = list_order(filters, self._newest_first)
        query = f"SELECT {RUN_COLUMNS} FROM runs {clause} {order} LIMIT {self._mark}"
        with self._kept(write=False) as db:
            rows = db.execute(query, (*values, filters.get("limit", LIST_LIMIT))).fetchall()
        return [run_record(r) for r in rows]

    def events(self, run_id: str) -> list[Event]:
        with self._kept(write=False) as db:
            return read_events(db.execute(EVENTS_QUERY.format(mark=self._mark), (run_id,)).fetchall())

    def keep_session(self, session_id: str, kept: KeptSession, now: float) -> None:
        from handrail.store import sessions  # lazy: what a hook never calls

        with self._kept() as db:
            db.execute(sessions.prune(self._mark), (now, kept.person, kept.person))
            key = sessions.key_of(session_id)
            db.execute(sessions.insert(self._mark), (key, kept.person, kept.csrf, kept.expires))

    def kept_session(self, session_id: str, now: float) -> KeptSession | None:
        from handrail.store import sessions  # lazy: what a hook never calls

        with self._kept(write=False) as db:
            row = db.execute(sessions.select(self._mark), (sessions.key_of(session_id), now)).fetchone()
        return None if row is None else sessions.KeptSession(str(row[0]), str(row[1]), float(row[2]))

    def end_session(self, session_id: str) -> None:
        from handrail.store import sessions  # lazy: what a hook never calls

        with self._kept() as db:
            db.execute(sessions.delete(self._mark), (sessions.key_of(session_id),))

    def keep_challenge(self, key: str, person: str, body: str, expires: float, now: float) -> None:
        from handrail.store import challenges  # lazy: what a hook never calls

        with self._kept() as db:
            db.execute(challenges.prune(self._mark), (now, person, person))
            db.execute(challenges.insert(self._mark), (challenges.key_of(key), person, body, expires))

    def take_challenge(self, key: str, now: float) -> str | None:
        from handrail.store import challenges  # lazy: what a hook never calls

        with self._kept() as db:  # the DELETE that returns it is its one use, on any server
            rows = db.execute(challenges.take(self._mark), (challenges.key_of(key), now)).fetchall()
        return str(rows[0][0]) if rows else None

    def notifications(self, run_id: str) -> list[Notification]:
        from handrail.store import outbox  # lazy: what a hook never calls

        with self._kept(write=False) as db:
            rows = db.execute(outbox.listing(self._mark), (run_id,)).fetchall()
        return [outbox.notification(r) for r in rows]

    def passkeys(self, person: str | None = None) -> list[Passkey]:
        from handrail.store import passkeys  # lazy: what a hook never calls

        with self._kept(write=False) as db:
            found = db.execute(passkeys.select(self._mark, person), () if person is None else (person,))
            rows = found.fetchall()
        return [passkeys.passkey(r) for r in rows]

    def add_passkey(self, key: Passkey) -> None:
        from handrail.store import passkeys  # lazy: what a hook never calls

        with self._kept() as db:
            db.execute(passkeys.insert(self._mark), key.values())

    def passkey_used(self, credential_id: str, sign_count: int) -> None:
        from handrail.store import passkeys  # lazy: what a hook never calls

        with self._kept() as db:
            db.execute(passkeys.count_used(self._mark), (sign_count, credential_id))

    def remove_passkey(self, person: str, credential_id: str) -> bool:
        from handrail.store import passkeys  # lazy: what a hook never calls

        with self._kept() as db:
            return bool(db.execute(passkeys.delete(self._mark), (person, credential_id)).rowcount > 0)

    def events_since(self, at: str, limit: int) -> list[tuple[str, Event, str | None]]:
        with self._kept(write=False) as db:
            rows = db.execute(EVENTS_SINCE_QUERY.format(mark=self._mark), (at, limit)).fetchall()
        return read_linked(rows)

    def shown_events(self, run_id: str, recent: int) -> list[Event]:
        with self._kept(write=False) as db:
            found = db.execute(shown_events_query(self._mark), shown_events_values(run_id, recent))
            rows = found.fetchall()
        return read_events(sorted(rows, key=lambda row: int(row[0])))

    def idle_runs(self, before: str, limit: int) -> list[RunRecord]:
        with self._kept(write=False) as db:
            rows = db.execute(outbox.idle(self._mark).format(columns=RUN_COLUMNS), (before, limit)).fetchall()
        return [run_record(r) for r in rows]
