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
from typing import TYPE_CHECKING

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


def digests(run: Any) -> dict[str, str]:
    """Each sealed field of `run` (a RunRecord, its JSON fields as read back) as a short
    digest of its canonical form."""
    found = {name: _digest(getattr(run, name)) for name in SEALED}
    found.update({name: _digest(value) for name in SEALED_ONCE if (value := getattr(run, name)) is not None})
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


def differs(run: Any, text: str | None) -> list[str]:
    """What of `run` (a RunRecord) does not match its seal, in words: empty when all does."""
    if not text:
        return ["the row keeps no seal"]
    try:
        found = json.loads(text)
    except (ValueError, RecursionError):
        return ["its seal is not JSON"]
    if not isinstance(found, dict) or not isinstance(found.get("fields"), dict):
        return ["its seal is not a seal"]
    body = {"fields": found["fields"], "head": found.get("head"), "events": found.get("events")}
    problems: list[str] = []
    if found.get("seal") != digest(canonical(body)):
        problems.append("its seal does not match its own hash")
    if found.get("head") != run.head:
        problems.append("head (the hash of the last event) is not the one sealed")
    if found.get("events") != run.events:
        problems.append(f"events ({run.events}) is not the count sealed ({found.get('events')})")
    mine = digests(run)
    fields = found["fields"]
    problems += [
        f"{name} is not as sealed" for name in (*SEALED, *SEALED_ONCE) if fields.get(name) != mine.get(name)
    ]
    return problems
