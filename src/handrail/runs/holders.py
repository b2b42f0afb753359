"""How a branch's holder is shown to people (the parent's `branches`, `handrail runs show`
and `list --tree`, the dashboard): the kind of agent session and a short id the person
can match with their agents, never the raw session string. The store keeps the raw one;
only the holder's own calls are matched against it.

- `stdio:1a2b3c4d`: the first 8 characters of the stdio session's random id (request
  spans carry the whole id as `mcp.session.id`).
- `http-session:agent-7`: the client's `Mcp-Session-Id` as it sent it, its first 16
  characters and `…` when longer.
- `http-connection:5e6f7a8b`: 8 hex digits of a hash of the connection, which stands for
  it without naming its host and port.
- `person`: held by a person (a claim naming no agent session).

The store keeps, after the session and a newline (which no session id holds), the
SHA-256 of the lease token the claim gave: the token is a bearer secret, so only its
digest is kept, and it is never shown.
"""

from __future__ import annotations

import hashlib
import hmac

SHORT = 8  # characters of a random session id shown
NAMED = 16  # characters of a client's own session name shown
LEASE = "\nlease:"  # between the session and the digest of the claim's lease token


def holder_with_lease(session: str, token: str) -> str:
    """What the store keeps as the holder of a branch claimed by `session` with `token`."""
    return f"{session}{LEASE}{token_digest(token)}"


def session_of(held: str | None) -> str | None:
    """The agent session (or `person`) a stored holder names, without its lease."""
    return None if held is None else held.split(LEASE, 1)[0]


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def token_matches(held: str | None, token: str) -> bool:
    """Whether `token` is the lease token of the claim that made `held` the holder."""
    kept = held.partition(LEASE)[2] if held is not None else ""
    return bool(kept) and hmac.compare_digest(kept, token_digest(token))


def shown_holder(held_by: str | None) -> str | None:
    """`held_by` as people are shown it; None when nobody holds the branch."""
    if held_by is None:
        return None
    kind, _, rest = held_by.split(LEASE, 1)[0].partition(":")
    if not rest:
        return kind
    if kind == "http-session":
        return f"{kind}:{rest if len(rest) <= NAMED else rest[:NAMED] + '…'}"
    if kind == "http-connection":
        return f"{kind}:{hashlib.sha256(rest.encode()).hexdigest()[:SHORT]}"
    return f"{kind}:{rest[:SHORT]}"
