"""What the gate reads from and writes to the run store: the active run of a working
folder with the facts a decision needs, and the `gate` events.

Only the store is read: the current step's policy is compiled from the run's
pinned workflow source (kept in the store when the run started), so a hook loads
no catalog and no other workflow.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from handrail.runs.gate import ACTIVE, RunFacts, bound_session, decide, inside, stop_refusals

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from handrail.runs.gate import Decision, GateEvent, Options, Protected
    from handrail.store.base import Event, RunRecord, RunStore

OPEN_RUNS_READ = 200
WRITE_TRIES = 8
ACTOR = "gate"


def judge(
    store: RunStore,
    event: GateEvent,
    options: Options,
    protected: Protected,
    folders: Sequence[str],
    owner: str | None = None,
) -> Decision:
    """One hook event decided against the store, and its `gate` event written: the one
    path of the command hook and of `handrail serve`'s HTTP hooks. `owner`: only that
    person's runs are found (a server's token); None: every run of the store."""
    found = session_run(store, folders, owner, event.session)
    if found is None:
        return decide(None, event, options, protected)
    run, events = found
    facts_ = facts(store, run, events)
    decision = decide(facts_, event, options, protected)
    data = decision.record
    if event.session is not None and facts_.bound is None:  # the first session seen binds the run
        data = {
            **(data or {"event": event.kind, "decision": "bind", "session": event.session[:100]}),
            "bind": True,
        }
    if data is not None:
        record(store, run, facts_.step_id, data)
    return decision


def session_run(
    store: RunStore, folders: Sequence[str], owner: str | None, session: str | None
) -> tuple[RunRecord, list[Event]] | None:
    """The open run of `folders` for a harness session, with its events: the one bound
    to `session`, else one bound to no session yet, else the most recently updated
    (bound to another session: its policy still holds the workspace)."""
    runs = holding(store, folders, owner)
    if not runs:
        return None
    if session is None:
        return runs[0], store.events(runs[0].id)
    first: tuple[RunRecord, list[Event]] | None = None
    unbound: tuple[RunRecord, list[Event]] | None = None
    for run in runs:
        events = store.events(run.id)
        bound = bound_session([(e.type, e.data) for e in events])
        if bound == session:
            return run, events
        if bound is None and unbound is None:
            unbound = run, events
        if first is None:
            first = run, events
    return unbound or first


def holding(store: RunStore, folders: Sequence[str], owner: str | None = None) -> list[RunRecord]:
    """The open runs whose workspace holds the first of `folders` that one holds, most
    recently updated first."""
    runs = store.list_runs(statuses=ACTIVE, owner=owner, limit=OPEN_RUNS_READ)
    for folder in folders:
        folder = os.path.normpath(folder)
        found = [run for run in runs if inside(folder, run.workspace)]
        if found:
            return found
    return []


def active_run(store: RunStore, folders: Sequence[str], owner: str | None = None) -> RunRecord | None:
    """The open run whose workspace holds the first of `folders` that one holds; the
    most recently updated when several do."""
    found = holding(store, folders, owner)
    return found[0] if found else None


def facts(store: RunStore, run: RunRecord, events: list[Event] | None = None) -> RunFacts:
    import orjson  # lazy: a hook's start-up

    from handrail.policy import iter_steps, policy_of_source  # lazy: a hook's start-up

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
    if events is None:
        events = store.events(run.id)
    bound = bound_session([(e.type, e.data) for e in events])
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
        stop_refusals=stop_refusals([(e.type, e.step_id, e.data) for e in events], step_id, bound),
        bound=bound,
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
