"""The dashboard's sessions (store/sessions.py), passkey challenges
(store/challenges.py) and the people's passkeys (store/passkeys.py), written and read
the same way by both stores: the same SQL with the driver's placeholder, one
transaction a call. A store names its placeholder and the transaction it writes in;
the rest is here once."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded when a session or a passkey is kept, never by a gate hook's read
    from handrail.store.passkeys import Passkey
    from handrail.store.sessions import KeptSession


class KeptRows:
    _mark: str  # `?` for sqlite3, `%s` for psycopg

    def _kept(self, write: bool = True) -> AbstractContextManager[Any]:
        """One transaction on the store's database: a write, or a read that takes no lock."""
        raise NotImplementedError

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

    # -- passkeys (store/passkeys.py) ---------------------------------------------------
    def passkeys(self, person: str | None = None) -> list[Passkey]:
        from handrail.store import passkeys  # lazy: what a hook never calls

        with self._kept(write=False) as db:
            rows = db.execute(
                passkeys.select(self._mark, person), () if person is None else (person,)
            ).fetchall()
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
