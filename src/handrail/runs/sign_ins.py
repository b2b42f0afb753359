"""The dashboard's sessions and the passkey challenges it hands out, kept in the run
store (store/sessions.py, store/challenges.py) so that every server sharing it knows a
person signed in on any one of them, a sign-out or an expiry holds on every one, and a
challenge asked on one is answered on another, once. The clock is the wall clock:
servers share no process."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from handrail.store.sessions import KeptSession

if TYPE_CHECKING:
    from handrail.runs.ledger import Ledger


class SignIns:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def keep(self, session_id: str, person: str, csrf: str, expires: float) -> None:
        self.ledger.store.keep_session(session_id, KeptSession(person, csrf, expires), time.time())

    def find(self, session_id: str) -> KeptSession | None:
        """The session, unless it expired or was ended (on this server or any other)."""
        return self.ledger.store.kept_session(session_id, time.time())

    def end(self, session_id: str) -> None:
        self.ledger.store.end_session(session_id)

    def ask(self, key: str, person: str, body: str, seconds: float) -> None:
        now = time.time()
        self.ledger.store.keep_challenge(key, person, body, now + seconds, now)

    def taken(self, key: str) -> str | None:
        """The challenge asked under `key`, unless it expired or was taken (here or anywhere)."""
        return self.ledger.store.take_challenge(key, time.time())
