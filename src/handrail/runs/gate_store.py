"""What the gate reads from and writes to the run store: the active run of a working
folder with the facts a decision needs, and the `gate` events.

Only the store is read: the current step's policy is compiled from the run's
pinned workflow source (kept in the store when the run started), so a hook loads
no catalog and no other workflow.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from handrail.runs.gate import ACTIVE, RunFacts, inside, stop_refusals

if TYPE_CHECKING:
    from collections.abc import Mapping

    from handrail.store.base import RunRecord, RunStore

OPEN_RUNS_READ = 200
WRITE_TRIES = 8
ACTOR = "gate"


def active_run(store: RunStore, folders: list[str]) -> RunRecord | None:
    """The open run whose workspace holds the first of `folders` that one holds; the
    most recently updated when several do."""
    runs = store.list_runs(statuses=ACTIVE, limit=OPEN_RUNS_READ)
    for folder in folders:
        folder = os.path.normpath(folder)
        for run in runs:  # most recently updated first
            if inside(folder, run.workspace):
                return run
    return None


def facts(store: RunStore, run: RunRecord) -> RunFacts:
    import orjson  # lazy: a hook's start-up

    from handrail.rules.policy import iter_steps, policy_of_source  # lazy: a hook's start-up

    source = store.get_source(run.source_hash)
    document: Mapping[str, Any] = {}
    if source is not None:
        try:
            loaded = orjson.loads(source)
        except orjson.JSONDecodeError:
            loaded = {}
        document = loaded if isinstance(loaded, dict) else {}
    ids = [raw.get("id") for raw in iter_steps(document.get("steps"))]
    step = run.position.get("step")
    step = step if isinstance(step, dict) else {}
    step_id = step.get("id") if isinstance(step.get("id"), str) else None
    events = store.events(run.id)
    accepted = tuple(e.step_id for e in events if e.type == "accepted" and e.step_id is not None)
    return RunFacts(
        run_id=run.id,
        workflow_id=run.workflow_id,
        goal=run.goal,
        status=run.status,
        workspace=run.workspace,
        step_id=step_id,
        step_title=step.get("title") if isinstance(step.get("title"), str) else step_id,
        step_prompt=step.get("prompt") if isinstance(step.get("prompt"), str) else None,
        step_number=ids.index(step_id) + 1 if step_id in ids else run.accepted + 1,
        step_count=len(ids),
        accepted=accepted,
        policy=policy_of_source(document, step_id) if step_id is not None else None,
        stop_refusals=stop_refusals([(e.type, e.step_id, e.data) for e in events], step_id),
    )


def record(store: RunStore, run: RunRecord, step_id: str | None, data: Mapping[str, Any]) -> None:
    """Append one `gate` event to the run, through the store's compare-and-set."""
    from handrail.store.base import Conflict, EventType, NewEvent, RunUpdate  # lazy: a hook's start-up

    current: RunRecord | None = run
    for _ in range(WRITE_TRIES):
        if current is None:
            return
        try:
            store.update(current, RunUpdate(), [NewEvent(EventType.GATE, step_id, data)], ACTOR)
            return
        except Conflict:
            current = store.get(run.id)
