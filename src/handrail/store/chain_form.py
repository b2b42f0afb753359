"""The bytes an event's hash is taken over (spec/record.md), and the one byte form
handrail hashes and signs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from handrail.internals import sha256  # the digests of hashlib's, without OpenSSL


def canonical(value: Any) -> bytes:
    """The one byte form handrail hashes and signs: keys sorted by code point, no
    whitespace, ASCII only (\\u escapes, lowercase hex), integers exact, floats in
    Python's shortest round-trip form, no NaN or Infinity."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return text.encode("ascii")


def hashed_form(
    run_id: str,
    seq: int,
    kind: str,
    at: str,
    actor: str,
    step_id: str | None,
    data: Mapping[str, Any],
    prev: str | None,
) -> dict[str, Any]:
    """What an event's hash is taken over: every column of its row, and the hash before it."""
    return {
        "run": run_id,
        "seq": seq,
        "type": kind,
        "at": at,
        "actor": actor,
        "stepId": step_id,
        "data": data,
        "prev": prev,
    }


def event_hash(form: Mapping[str, Any]) -> str:
    return str(sha256(canonical(form)).hexdigest())


def digest(data: bytes) -> str:
    """The SHA-256 of `data` in hex, with the SHA-256 this module loads (not OpenSSL's)."""
    return str(sha256(data).hexdigest())
