"""Who is signed in: server-side sessions behind an opaque cookie. The person a
token names comes from the transport's `People` (handrail.service.people)."""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

COOKIE = "handrail_session"
SESSION_SECONDS = 12 * 3600
MAX_SESSIONS = 10_000  # the oldest is forgotten first: sign-ins cannot grow memory without bound


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    person: str
    csrf: str  # the token every form that changes something must carry
    expires: float


class Sessions:
    def __init__(self, seconds: float = SESSION_SECONDS, limit: int = MAX_SESSIONS) -> None:
        self._seconds = seconds
        self._limit = limit
        self._items: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def create(self, person: str) -> Session:
        session = Session(
            secrets.token_urlsafe(32), person, secrets.token_urlsafe(32), time.monotonic() + self._seconds
        )
        with self._lock:
            self._items[session.id] = session
            while len(self._items) > self._limit:
                self._items.popitem(last=False)
        return session

    @staticmethod
    def passing(person: str) -> Session:
        """A session for one request only (a bearer token's): its CSRF token matches no form."""
        return Session("", person, secrets.token_urlsafe(32), 0.0)

    def get(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        with self._lock:
            session = self._items.get(session_id)
            if session is not None and session.expires < time.monotonic():
                del self._items[session_id]
                return None
        return session

    def end(self, session_id: str | None) -> None:
        with self._lock:
            self._items.pop(session_id or "", None)


class Identifies(Protocol):
    """handrail.service.people.People: a token's person, or None."""

    def identify(self, token: str, *, scope: str | None = None) -> str | None: ...

    def credential(self, token: str) -> tuple[str, str] | None: ...
