"""The dashboard's sessions, kept in the run store (store/sessions.py) so that every
server sharing it knows a person signed in on any one of them, and a sign-out or an
expiry holds on every one. The clock is the wall clock: servers share no process."""

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
