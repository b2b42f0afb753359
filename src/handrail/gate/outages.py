"""Hook events the gate answered without the run store (`--on-error`), kept until the
store can be written again: then the run holding their working folder gets one `gate`
event about the outage (how many, from when to when, what was decided, why).

They are kept in `$HANDRAIL_HOME/gate-outages.jsonl`, one JSON line each, at most
`MAX_LINES` (the oldest go first) and `MAX_LINE` bytes a line: the file does not
depend on the workspace, so it is found by the command hook, by `handrail gate
--server` and by a `handrail serve` of the same home. Keeping it is best effort: a
home that cannot be written keeps nothing, and two hooks writing at the same moment
may lose a line.

A decision made whose `gate` event could not be written (a full store) is kept there
too, whole (`keep_record`): it is written to its run as it was, when the store takes
writes again.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from handrail.store.base import RunStore

NAME = "gate-outages.jsonl"
MAX_LINES = 200
MAX_LINE = 1000


def spool_path() -> Path:
    from handrail.home import handrail_home  # lazy: a hook's start-up

    return handrail_home() / NAME


def keep(
    cwd: str, event: str, decision: str, reason: str, path: Path | None = None, owner: str | None = None
) -> None:
    """Note one event answered without the store; `owner`: the person a server's hook
    answered for (None: the command hook's local store), whose runs alone may take it."""
    path = path or spool_path()
    line = json.dumps(
        {
            "at": time.time(),
            "cwd": cwd[:500],
            "owner": owner,
            "event": event,
            "decision": decision,
            "reason": reason[:300],
        },
        ensure_ascii=False,
    )
    if len(line.encode()) > MAX_LINE:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = _read(path)
        if len(lines) >= MAX_LINES:  # keep the newest: rewrite without the oldest
            _write(path, [*lines[len(lines) - MAX_LINES + 1 :], line])
            return
        with path.open("a", encoding="utf-8") as spool:
            spool.write(line + "\n")
    except OSError:  # a home that cannot be written: the warning on stderr is all there is
        pass


def keep_record(run_id: str, step_id: str | None, data: Mapping[str, Any], path: Path | None = None) -> bool:
    """Keep the `gate` event of a decision already answered, for its run; False when
    even the spool cannot take it (the answer stands: its stderr line is all there is)."""
    path = path or spool_path()
    line = json.dumps(
        {"at": time.time(), "run": run_id[:100], "step": step_id, "data": data}, ensure_ascii=False
    )
    if len(line.encode()) > MAX_LINE * 4:  # a record is bounded by the gate; this is a last guard
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as spool:
            spool.write(line + "\n")
    except OSError:
        return False
    return True


def replay(
    store: RunStore, folders: Sequence[str], owner: str | None = None, path: Path | None = None
) -> None:
    """Once the store answered: the outage events of the run holding `folders`, recorded
    as one `gate` event and then taken out of the spool."""
    path = path or spool_path()
    if not path.exists():  # the common case: one stat
        return
    from handrail.runs import gate_store  # lazy: a hook's start-up

    replay_records(store, path)
    run = gate_store.active_run(store, folders, owner)
    if run is None:
        return
    data, rest = pending(run.workspace, path, owner)
    if data is None:
        return
    step = run.position.get("step")
    step_id = step.get("id") if isinstance(step, dict) and isinstance(step.get("id"), str) else None
    gate_store.record(store, run, step_id, data)
    _write(path, rest)


def replay_records(store: RunStore, path: Path) -> None:
    """The kept `gate` events of decisions already answered, each written to its run in
    the order kept; a line whose run this store does not hold stays for another store."""
    from handrail.runs import gate_store  # lazy: a hook's start-up

    rest: list[str] = []
    written = False
    for line in _read(path):
        try:
            entry = json.loads(line)
        except ValueError:
            written = True  # a torn line: dropped
            continue
        if not (isinstance(entry, dict) and isinstance(entry.get("run"), str)):
            rest.append(line)
            continue
        run = store.get(entry["run"])
        data, step = entry.get("data"), entry.get("step")
        if run is None or not isinstance(data, dict):
            rest.append(line)
            continue
        gate_store.record(store, run, step if isinstance(step, str) else None, {**data, "spooled": True})
        written = True
    if written:
        _write(path, rest)


def pending(workspace: str, path: Path, owner: str | None = None) -> tuple[dict[str, Any] | None, list[str]]:
    """The outage events of `owner`'s folders inside `workspace` summed up as one `gate`
    event's data (None when there are none), and the spool's other lines: another
    person's stay for their own runs."""
    lines = _read(path)
    mine: list[Mapping[str, Any]] = []
    rest: list[str] = []
    prefix = workspace.rstrip(os.sep) + os.sep
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a torn line: dropped
        cwd = entry.get("cwd") if isinstance(entry, dict) else None
        theirs = isinstance(entry, dict) and entry.get("owner") == owner
        if theirs and isinstance(cwd, str) and (cwd == workspace or cwd.startswith(prefix)):
            mine.append(entry)
        else:
            rest.append(line)
    if not mine:
        return None, rest
    decisions = sorted({str(entry.get("decision")) for entry in mine})
    data = {
        "event": "outage",
        "decision": "/".join(decisions),
        "count": len(mine),
        "first": _iso(mine[0].get("at")),
        "last": _iso(mine[-1].get("at")),
        "reason": str(mine[-1].get("reason", ""))[:300],
    }
    return data, rest


def _read(path: Path) -> list[str]:
    try:
        with path.open("rb") as spool:
            data = spool.read(MAX_LINES * MAX_LINE * 2)
    except FileNotFoundError:
        return []
    return [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]


def _write(path: Path, lines: list[str]) -> None:
    if not lines:
        path.unlink(missing_ok=True)
        return
    temporary = path.with_name(path.name + f".{os.getpid()}.tmp")
    temporary.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    os.replace(temporary, path)


def _iso(at: Any) -> str:
    seconds = at if isinstance(at, (int, float)) else 0.0
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
