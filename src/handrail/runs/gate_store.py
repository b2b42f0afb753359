"""What the gate reads from and writes to the run store: the active run of a working
folder with the facts a decision needs, and the `gate` events.

Only the store is read: the current step's policy is compiled from the run's
pinned workflow source (kept in the store when the run started), so a hook loads
no catalog and no other workflow. The store is a `RunStore`, or, for the hook on
SQLite, the light path (store/sqlite_light.py), which reads with the same calls and
appends the event its own way.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from handrail.runs.gate import ACTIVE, RunFacts, inside, stop_refusals
from handrail.store.sqlite_light import LightSqlite

if TYPE_CHECKING:
    from collections.abc import Mapping

    from handrail.store.base import RunRecord, RunStore
    from handrail.store.sqlite_light import OpenRun

OPEN_RUNS_READ = 200
ACTOR = "gate"
GATE = "gate"  # EventType.GATE, whose module the hook does not load


def active_run(store: RunStore | LightSqlite, folders: list[str]) -> RunRecord | OpenRun | None:
    """The open run whose workspace holds the first of `folders` that one holds; the
    most recently updated when several do."""
    runs = store.list_runs(statuses=ACTIVE, limit=OPEN_RUNS_READ)
    for folder in folders:
        folder = os.path.normpath(folder)
        for run in runs:  # most recently updated first
            if inside(folder, run.workspace):
                return run
    return None


def facts(store: RunStore | LightSqlite, run: RunRecord | OpenRun) -> RunFacts:
    from handrail.policy import iter_steps, policy_of_source  # lazy: a hook's start-up

    source = store.get_source(run.source_hash)
    document: Mapping[str, Any] = {}
    if source is not None:
        try:
            loaded = json.loads(source)
        except (ValueError, RecursionError):
            loaded = {}
        document = loaded if isinstance(loaded, dict) else {}
    ids = [raw.get("id") for raw in iter_steps(document.get("steps"))]
    step = run.position.get("step")
    step = step if isinstance(step, dict) else {}
    step_id = step.get("id") if isinstance(step.get("id"), str) else None
    events = store.events(run.id)
    accepted = tuple(e.step_id for e in events if e.type == "accepted" and e.step_id is not None)
    folders = events[0].data.get("workflowFolders") if events else None
    return RunFacts(
        run_id=run.id,
        workflow_id=run.workflow_id,
        goal=run.goal,
        status=str(run.status),
        workspace=run.workspace,
        step_id=step_id,
        step_title=step.get("title") if isinstance(step.get("title"), str) else step_id,
        step_prompt=step.get("prompt") if isinstance(step.get("prompt"), str) else None,
        step_number=ids.index(step_id) + 1 if step_id in ids else run.accepted + 1,
        step_count=len(ids),
        accepted=accepted,
        policy=policy_of_source(document, step_id) if step_id is not None else None,
        stop_refusals=stop_refusals([(str(e.type), e.step_id, e.data) for e in events], step_id),
        workflow_folders=tuple(f for f in folders if isinstance(f, str) and f)
        if isinstance(folders, list)
        else (),
    )


def record(
    store: RunStore | LightSqlite, run: RunRecord | OpenRun, step_id: str | None, data: Mapping[str, Any]
) -> None:
    """Append one `gate` event to the run. The light path appends holding the write lock,
    so no other writer can move the run meanwhile; a `RunStore` goes through the
    compare-and-set retry every run write uses."""
    if isinstance(store, LightSqlite):
        store.append(run.id, GATE, step_id, data, ACTOR)
        return
    from handrail.runs.ledger import Ledger  # lazy: a hook on SQLite never needs it
    from handrail.store.base import EventType, NewEvent, RunUpdate  # lazy: as above

    def attempt() -> None:
        current = store.get(run.id)
        if current is not None:  # a run deleted meanwhile takes no more events
            store.update(current, RunUpdate(), [NewEvent(EventType.GATE, step_id, data)], ACTOR)

    Ledger.retrying(run.id, attempt)
