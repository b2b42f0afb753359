"""What the gate reads from and writes to the run store: the active run of a working
folder with the facts a decision needs, and the `gate` events.

Only the store is read: the current step's policy is compiled from the run's
pinned workflow source (kept in the store when the run started), so a hook loads
no catalog and no other workflow. The hook reads SQLite through the light path
(store/sqlite_light.py); any other store (PostgreSQL, a server's own) is read
through the `RunStore` interface, and its writes go through `Ledger.retrying`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from handrail.runs.gate import ACTIVE, RunFacts, inside, stop_refusals
from handrail.store.sqlite_light import LightSqlite, OpenRun

if TYPE_CHECKING:
    from handrail.store.base import RunRecord, RunStore

OPEN_RUNS_READ = 200
ACTOR = "gate"
GATE = "gate"  # EventType.GATE, whose module a hook does not load


def active_run(store: LightSqlite | RunStore, folders: list[str]) -> OpenRun | RunRecord | None:
    """The open run whose workspace holds the first of `folders` that one holds; the
    most recently updated when several do."""
    if isinstance(store, LightSqlite):
        found = store.open_workspaces(ACTIVE, OPEN_RUNS_READ)
        for folder in folders:
            folder = os.path.normpath(folder)
            for run_id, workspace in found:  # most recently updated first
                if inside(folder, workspace):
                    return store.run(run_id)
        return None
    runs = store.list_runs(statuses=ACTIVE, limit=OPEN_RUNS_READ)
    for folder in folders:
        folder = os.path.normpath(folder)
        for run in runs:
            if inside(folder, run.workspace):
                return run
    return None


def facts(store: LightSqlite | RunStore, run: OpenRun | RunRecord) -> RunFacts:
    from handrail.policy import iter_steps, policy_of_source  # lazy: a hook's start-up

    source = (
        store.source(run.source_hash) if isinstance(store, LightSqlite) else store.get_source(run.source_hash)
    )
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
    if isinstance(store, LightSqlite):
        accepted = store.accepted_steps(run.id)
        newest: Iterator[tuple[str, str | None, Mapping[str, Any]]] = store.newest_events(run.id)
        started = store.first_event(run.id)
    else:
        events = store.events(run.id)
        accepted = tuple(e.step_id for e in events if e.type == "accepted" and e.step_id is not None)
        newest = ((str(e.type), e.step_id, e.data) for e in reversed(events))
        started = events[0].data if events else {}
    folders = started.get("workflowFolders")
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
        stop_refusals=stop_refusals(newest, step_id),
        workflow_folders=tuple(f for f in folders if isinstance(f, str) and f)
        if isinstance(folders, list)
        else (),
    )


def record(
    store: LightSqlite | RunStore, run: OpenRun | RunRecord, step_id: str | None, data: Mapping[str, Any]
) -> None:
    """Append one `gate` event to the run. The light path appends holding the write lock,
    so no other writer can move the run meanwhile; the `RunStore` path goes through the
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
