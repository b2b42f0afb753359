"""Who is signed in: sessions kept in the run store behind an opaque cookie, so that
any server on a shared store serves any request of a person signed in on another, and
signing out or expiring ends the session on all of them (runs/sign_ins.py). The
person a token names comes from the transport's `People` (handrail.service.people)."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any, Protocol

COOKIE = "handrail_session"
SESSION_SECONDS = 12 * 3600


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    person: str
    csrf: str  # the token every form that changes something must carry
    expires: float  # seconds since the epoch


class Kept(Protocol):
    """handrail.runs.sign_ins.SignIns: the sessions in the shared store."""

    def keep(self, session_id: str, person: str, csrf: str, expires: float) -> None: ...

    def find(self, session_id: str) -> Any: ...

    def end(self, session_id: str) -> None: ...


class Sessions:
    """Blocking: each call reads or writes the store (call it off the event loop)."""

    def __init__(self, kept: Kept, seconds: float = SESSION_SECONDS) -> None:
        self._kept = kept
        self._seconds = seconds

    def create(self, person: str) -> Session:
        session = Session(
            secrets.token_urlsafe(32), person, secrets.token_urlsafe(32), time.time() + self._seconds
        )
        self._kept.keep(session.id, session.person, session.csrf, session.expires)
        return session

    @staticmethod
    def passing(person: str) -> Session:
        """A session for one request only (a bearer token's): its CSRF token matches no form."""
        return Session("", person, secrets.token_urlsafe(32), 0.0)

    def get(self, session_id: str | None) -> Session | None:
        if not session_id or len(session_id) > 128:
            return None
        found = self._kept.find(session_id)
        return None if found is None else Session(session_id, found.person, found.csrf, found.expires)

    def end(self, session_id: str | None) -> None:
        if session_id:
            self._kept.end(session_id)


class Identifies(Protocol):
    """handrail.service.people.People: a token's person, or None."""

    def identify(self, token: str, *, scope: str | None = None) -> str | None: ...

    def credential(self, token: str) -> tuple[str, str] | None: ...
