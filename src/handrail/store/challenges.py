"""The passkey challenges the dashboard hands out, as the store keeps them: shared by
every server on the store, so that the browser's answer may reach another server than
the one that asked, and each taken at most once whichever server takes it (the DELETE
that returns it is the one use). Only the SHA-256 of a challenge's key is kept: the key
names the person's session. `mark` is the driver's placeholder (`?` or `%s`)."""

from __future__ import annotations

from handrail.store.sessions import key_of, pruned

PER_PERSON = 20  # a person's newest open challenges: asking cannot grow the table without bound

__all__ = ["PER_PERSON", "insert", "key_of", "prune", "take"]


def insert(mark: str) -> str:
    """One challenge per key: asking again replaces the one asked before."""
    marks = ", ".join([mark] * 4)
    return (
        f"INSERT INTO passkey_challenges (key_hash, person, body, expires) VALUES ({marks}) "
        "ON CONFLICT (key_hash) DO UPDATE SET person = excluded.person, body = excluded.body, "
        "expires = excluded.expires"
    )


def take(mark: str) -> str:
    return f"DELETE FROM passkey_challenges WHERE key_hash = {mark} AND expires > {mark} RETURNING body"


def prune(mark: str) -> str:
    """The expired challenges, and the person's beyond their newest PER_PERSON - 1."""
    return pruned("passkey_challenges", PER_PERSON, mark)
