"""The run's side of asking a person through the client: each question's nonce, and an
answer's `request_state` read back and held to the question it claims to answer.

A client's answer counts only for a question the server put for the approval the run
waits on: each question is an `approval_asked` event, and an answer is used only while
that event is still the run's latest word on its approval (so once, and never for
another run, step or iteration). The client carries the question back in
`request_state`, whose random nonce only the SHA-256 in the event can confirm.
A client that takes URL-mode elicitation, asked by a server that knows the dashboard's
address, is sent to the run's page instead: the person decides there, signed in as
themself, and the client's answer to that question decides nothing.
The values asked and answered are the kernel's (model/approvals.py); see spec/runs.md,
"Approvals".
"""

from __future__ import annotations

import hashlib
import hmac
import secrets


def new_nonce() -> tuple[str, str]:
    """A question's nonce and the digest its event keeps (the log never holds the nonce)."""
    nonce = secrets.token_urlsafe(24)
    return nonce, digest(nonce)


def digest(nonce: str) -> str:
    return hashlib.sha256(nonce.encode("utf-8", "replace")).hexdigest()


def same_digest(nonce: str, kept: object) -> bool:
    return isinstance(kept, str) and hmac.compare_digest(digest(nonce), kept)


def parse_request_state(state: str) -> tuple[str, int, str] | None:
    """(runId, question seq, nonce) from a requestState this server made; None otherwise."""
    parts = state.split(":")
    if len(parts) != 3 or not parts[1].isdigit() or len(parts[1]) > 12 or not parts[2]:
        return None
    return parts[0], int(parts[1]), parts[2]
