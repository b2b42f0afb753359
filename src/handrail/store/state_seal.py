"""The run row's seal (spec/runs.md, "The row and its log"): the row's state bound to
its chain head, so that a row edited past the store is caught on every read.

Every write keeps, in the row's `seal`, a digest of each field of the row that the
run's events decide (`SEALED`), with the chain head and the count, and one hash over
it all. A read recomputes the digests from the row and names what differs, and
`runs verify` does the same beside the chain. There is no secret: whoever can write
the store can recompute all of it (SECURITY.md).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING

from handrail.model.codec import decode_stored
from handrail.store.chain_form import canonical, digest

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

# the run row's fields its events decide, as RunRecord names them
SEALED = (
    "owner",
    "workspace",
    "workflow_id",
    "workflow_version",
    "source_hash",
    "goal",
    "status",
    "context",
    "position",
    "accepted",
    "parent_id",
    "parent_step",
    "branch",
)
# sealed once the row holds it: a row sealed before the column existed has none, and
# a digest added, changed or taken away later is a mismatch all the same
SEALED_ONCE = ("gate",)
STORED_JSON = ("context", "position")  # kept as JSON text in the row, digested as values
# The digests of the sealed fields, by those fields' exact stored values: a server reads
# the same rows again and again (a hook, a poll), and a `gate` event changes none of
# them. A field changed is another key, so the memo never answers for a row it was not
# given; rows with more text than KEPT_BYTES are digested afresh, so it holds at most
# DIGESTS_KEPT * KEPT_BYTES of keys.
DIGESTS_KEPT = 32
KEPT_BYTES = 64 * 1024
SEALED_NAMES = (*SEALED, *SEALED_ONCE)
CONTEXT_AT, POSITION_AT, STATUS_AT = (SEALED_NAMES.index(name) for name in ("context", "position", "status"))


def digests(run: Any) -> dict[str, str]:
    """Each sealed field of `run` (a RunRecord, its JSON fields as read back) as a short
    digest of its canonical form."""
    found = {name: _digest(getattr(run, name)) for name in SEALED}
    found.update({name: _digest(value) for name in SEALED_ONCE if (value := getattr(run, name)) is not None})
    return found


def stored_digests(stored: tuple[Any, ...]) -> Mapping[str, str]:
    """`digests` of a row given as its sealed fields' stored values (`stored_fields`):
    from the memo when the row is small and plain. The mapping is shared: read it, never
    change it."""
    size = 0
    for value in stored:
        kind = type(value)
        if kind is str:
            size += len(value)
        elif kind is not int and value is not None:  # 1.0 == 1 and True == 1 as keys: not kept
            return _stored_digests(stored)
    return _stored_digests(stored) if size > KEPT_BYTES else kept_digests(stored)


def stored_fields(run: Any, context: str, position: str) -> tuple[Any, ...]:
    """The sealed fields of `run` (a RunRecord) as its row stores them, `context` and
    `position` their JSON text, in the order `stored_digests` takes them."""
    values = [getattr(run, name) for name in SEALED_NAMES]
    values[CONTEXT_AT], values[POSITION_AT] = context, position
    values[STATUS_AT] = str(values[STATUS_AT])  # a RunStatus as its word
    return tuple(values)


@lru_cache(maxsize=DIGESTS_KEPT)
def kept_digests(stored: tuple[Any, ...]) -> Mapping[str, str]:
    return _stored_digests(stored)


def _stored_digests(stored: tuple[Any, ...]) -> dict[str, str]:
    named = dict(zip((*SEALED, *SEALED_ONCE), stored, strict=True))
    for name in STORED_JSON:
        named[name] = decode_stored(named[name])
    found = {name: _digest(named[name]) for name in SEALED}
    found.update({name: _digest(value) for name in SEALED_ONCE if (value := named[name]) is not None})
    return found


def _digest(value: Any) -> str:
    plain = str(value) if isinstance(value, str) else value  # a RunStatus as its word
    return digest(canonical(plain))[:16]


def seal(fields: Mapping[str, str], head: str | None, events: int) -> str:
    """The row's `seal` column: the digests, the head and the count, and a hash of them."""
    body = {"fields": dict(fields), "head": head, "events": events}
    return json.dumps({**body, "seal": digest(canonical(body))}, separators=(",", ":"))


def reseal(text: str | None, head: str | None, events: int) -> str | None:
    """A seal moved on to a new head and count, its fields unchanged (a `gate` event,
    which decides none of them); None when there was none to move."""
    try:
        found = json.loads(text) if text else None
    except ValueError:
        return None
    if not isinstance(found, dict) or not isinstance(found.get("fields"), dict):
        return None
    return seal(found["fields"], head, events)


def differs(run: Any, text: str | None, mine: Mapping[str, str] | None = None) -> list[str]:
    """What of `run` (a RunRecord) does not match its seal, in words: empty when all does.
    `mine`: `digests(run)`, when the caller has them (`stored_digests`)."""
    if not text:
        return ["the row keeps no seal"]
    read = read_seal(text)
    if isinstance(read, str):
        return [read]
    fields, head, events, whole = read
    problems: list[str] = []
    if not whole:
        problems.append("its seal does not match its own hash")
    if head != run.head:
        problems.append("head (the hash of the last event) is not the one sealed")
    if events != run.events:
        problems.append(f"events ({run.events}) is not the count sealed ({events})")
    mine = digests(run) if mine is None else mine
    problems += [
        f"{name} is not as sealed" for name in (*SEALED, *SEALED_ONCE) if fields.get(name) != mine.get(name)
    ]
    return problems


@lru_cache(maxsize=DIGESTS_KEPT)
def read_seal(text: str) -> str | tuple[Mapping[str, Any], Any, Any, bool]:
    """A seal's fields, head and count, and whether its own hash holds; or what is wrong
    with it. Kept by its text, as the digests are: a row read again is checked again,
    against a seal already read. A seal is a few hundred bytes."""
    try:
        found = json.loads(text)
    except (ValueError, RecursionError):
        return "its seal is not JSON"
    if not isinstance(found, dict) or not isinstance(found.get("fields"), dict):
        return "its seal is not a seal"
    body = {"fields": found["fields"], "head": found.get("head"), "events": found.get("events")}
    return found["fields"], body["head"], body["events"], found.get("seal") == digest(canonical(body))
