"""The dashboard's signed-in sessions as the store keeps them, so that every server on
a shared store serves every request of a person signed in on any of them, and a
sign-out or an expiry holds on all. Only the SHA-256 of a session's id is kept: a
reader of the database cannot take over a session from its rows. `mark` is the
driver's placeholder (`?` for sqlite3, `%s` for psycopg)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

PER_PERSON = 100  # a person's newest sessions kept: sign-ins cannot grow the table without bound


@dataclass(frozen=True, slots=True)
class KeptSession:
    person: str
    csrf: str
    expires: float  # seconds since the epoch: the servers' clocks, not one process's


def key_of(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def insert(mark: str) -> str:
    marks = ", ".join([mark] * 4)
    return f"INSERT INTO dashboard_sessions (id_hash, person, csrf, expires) VALUES ({marks})"


def select(mark: str) -> str:
    return f"SELECT person, csrf, expires FROM dashboard_sessions WHERE id_hash = {mark} AND expires > {mark}"


def delete(mark: str) -> str:
    return f"DELETE FROM dashboard_sessions WHERE id_hash = {mark}"


def prune(mark: str) -> str:
    return pruned("dashboard_sessions", PER_PERSON, mark)


def pruned(table: str, per_person: int, mark: str) -> str:
    """The expired rows of `table`, and the person's beyond their newest `per_person` - 1,
    which leaves room for the one kept next (params: now, person, person)."""
    return (
        f"DELETE FROM {table} WHERE expires <= {mark} OR (person = {mark} AND expires < "
        f"(SELECT expires FROM {table} WHERE person = {mark} "
        f"ORDER BY expires DESC LIMIT 1 OFFSET {per_person - 2}))"
    )
