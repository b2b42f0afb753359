"""The baseline anchored in the run store (spec/gate.md, "The baseline anchored"): each
time the gate writes its baseline file, the sha256 of the bytes goes into the run row's
gate digest, through the ledger, under the row's seal. A file read back whose hash is
not the row's was rewritten outside the gate: it is not trusted, the copy kept by the
row's hash is compared with instead, and the rewrite is a `violation` told to the
agent. With no such copy the gate cannot judge, and refuses.

A row that keeps no hash (a run written before this, or a store without digests) trusts
the file, as the gate did before; the first baseline written anchors it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from typing import TYPE_CHECKING, NamedTuple

from handrail.gate import baseline
from handrail.runs import gate_digest
from handrail.runs.violations import Change, Forbidden

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from handrail.gate.baseline import GateFolder, Repo, Snapshot
    from handrail.runs.gate import RunFacts

ACTOR = "gate"
WHAT = "baseline"  # a violation's change of the baseline file itself


class Loaded(NamedTuple):
    snapshot: Snapshot
    repo: Repo | None
    anchor: str | None  # the row's hash the baseline was checked against (None: none kept)
    rewritten: bytes | None  # the file as found, when it was not the anchored one


class Untrusted(Exception):
    """The baseline file is not the one the row anchors, and no copy of that one is left."""


def loaded(folder: GateFolder, store: Any, run: Any, facts: RunFacts, kind: str) -> Loaded | None:
    """The baseline to compare with, checked against the row's hash; None when there is
    none. Raises `Untrusted` (after recording the rewrite) when it cannot be trusted."""
    path = os.path.join(folder.path, baseline.BASELINE)
    try:
        with open(path, "rb") as opened:
            data: bytes | None = opened.read()
    except OSError:
        data = None
    sha = hashlib.sha256(data).hexdigest() if data is not None else None
    anchor = gate_digest.anchor_of(run.gate)
    if anchor is not None and sha != anchor:  # another hook may have moved it on since the row was read
        fresh = store.get(run.id)
        anchor = gate_digest.anchor_of(fresh.gate) if fresh is not None else anchor
    if anchor is None or sha == anchor:
        found = baseline.parse(data) if data is not None else None
        return Loaded(found[0], found[1], anchor, None) if found is not None else None
    kept = _kept(folder, anchor)
    found = baseline.parse(kept) if kept is not None else None
    if found is None:
        reason = (
            f"handrail: the gate's baseline {path} was rewritten outside the gate, and the copy run "
            f"{facts.run_id} anchors is gone"
        )
        record(store, run, facts.step_id, None, _untrusted(kind, path, reason))
        raise Untrusted(reason.removeprefix("handrail: "))
    return Loaded(found[0], found[1], anchor, data if data is not None else b"")


def matches(folder: GateFolder, run: Any) -> bool:
    """Whether the baseline file is the one the row anchors (or the row anchors none)."""
    expected = gate_digest.anchor_of(run.gate)
    if expected is None:
        return True
    try:
        with open(os.path.join(folder.path, baseline.BASELINE), "rb") as opened:
            return hashlib.sha256(opened.read()).hexdigest() == expected
    except OSError:
        return False


def _kept(folder: GateFolder, sha: str) -> bytes | None:
    try:
        with open(os.path.join(folder.path, baseline.ANCHORED, sha), "rb") as opened:
            data = opened.read()
    except OSError:
        return None
    return data if hashlib.sha256(data).hexdigest() == sha else None


def forbidden(folder: GateFolder, facts: RunFacts) -> Forbidden:
    """The rewrite of the baseline file as a violation's first change."""
    path = os.path.join(folder.path, baseline.BASELINE)
    reason = (
        f"handrail: the gate's baseline {path} was rewritten outside the gate (run {facts.run_id} keeps "
        "another hash of it); what changed was judged against the anchored baseline"
    )
    return Forbidden(Change(WHAT, path, "modified"), reason)


def set_aside(loaded_: Loaded, keep_folder: str) -> list[str]:
    """The rewritten file kept for the person; what is said of it."""
    if loaded_.rewritten is None:
        return []
    os.makedirs(keep_folder, exist_ok=True)
    with open(os.path.join(keep_folder, baseline.BASELINE), "wb") as written:
        written.write(loaded_.rewritten)
    return [f"{baseline.BASELINE} (rewritten outside the gate: not trusted, replaced)"]


def _untrusted(kind: str, path: str, reason: str) -> dict[str, Any]:
    return {
        "event": kind,
        "changes": [{"what": WHAT, "target": path[:300], "change": "modified"}],
        "count": 1,
        "reason": reason[:600],
        "undone": [],
        "kept": [],
    }


def save(
    store: Any,
    run: Any,
    folder: GateFolder,
    snapshot: Snapshot,
    repo: Repo | None,
    step: str | None,
    anchor: str | None,
    violation: Mapping[str, Any] | None = None,
) -> str:
    """The baseline written and its hash anchored in the row, with `violation` (a
    `violation` event's data) in the same write. A baseline the row already anchors,
    with nothing to record, writes nothing to the store. Returns the hash."""
    data = baseline.encoded(snapshot, repo, step)
    sha = baseline.keep(folder, data)
    if sha != anchor or violation is not None:  # the row first: a failed write leaves the file as anchored
        record(store, run, step, sha, violation)
    baseline.write(folder, baseline.BASELINE, data)
    if sha != anchor:
        _prune(folder, sha)
    return sha


def record(
    store: Any, run: Any, step: str | None, sha: str | None, violation: Mapping[str, Any] | None
) -> None:
    """Through the compare-and-set retry every run write uses (runs/ledger.py)."""
    from handrail.model.runs import EventType, NewEvent, RunUpdate  # lazy: as above
    from handrail.runs.ledger import Ledger  # lazy: only a hook that writes needs it
    from handrail.runs.violations import VIOLATION  # lazy: as above

    def attempt() -> None:
        current = store.get(run.id)
        if current is None:  # a run deleted meanwhile takes no more writes
            return
        gate = gate_digest.anchored(current.gate, sha) if sha is not None else None
        events = [NewEvent(EventType(VIOLATION), step, violation)] if violation is not None else []
        if gate != current.gate or events:
            store.update(current, RunUpdate(gate=gate if gate != current.gate else None), events, ACTOR)

    Ledger.retrying(run.id, attempt)


def _prune(folder: GateFolder, sha: str) -> None:
    """The copies of baselines the row no longer anchors."""
    kept = os.path.join(folder.path, baseline.ANCHORED)
    try:
        names = os.listdir(kept)
    except OSError:
        return
    for name in names:
        if name != sha:
            with contextlib.suppress(OSError):
                os.remove(os.path.join(kept, name))
