"""What the gate reads from and writes to the run store: the active run of a working
folder with the facts a decision needs, and the `gate` events.

Only the store is read: the current step's policy comes from the run row's gate
digest (runs/gate_digest.py), written when the step changed and covered by the row's
seal, so a hook loads no catalog and parses no workflow. A row without a digest (a
run started before the digest existed) has its step's policy compiled from its
pinned source. Every event is written through the ledger's compare-and-set retry.
"""

import json
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from handrail.model.runs import Event, RunRecord
from handrail.runs import gate_digest
from handrail.runs.gate import (
    ACTIVE,
    Decision,
    GateEvent,
    Options,
    Protected,
    RunFacts,
    bound_session,
    compacted_since_prompt,
    inside,
    stop_counts,
)
from handrail.runs.gate_decision import decide
from handrail.store.base import RunStore

OPEN_RUNS_READ = 200
# a waiting run's open children read to find the one a session works: a parallel loop
# has at most its maxIterations branches open; the rest are the least recently updated
CHILDREN_READ = 100
TREE_DEPTH = 8  # how deep the gate follows a session into runs that wait on runs
# how far back a stop's row of refusals is read: far more than the stop limit (at most
# 7) with the tool calls between them; the rest of a long log is never read
RECENT_EVENTS_READ = 200
ACTOR = "gate"
GATE = "gate"  # EventType.GATE, whose module the hook does not load
Found = tuple[RunRecord, Sequence[Event]]  # a run and the events of it read


class Judged(NamedTuple):
    decision: Decision
    run: RunRecord | None  # the run the decision was written against
    facts: RunFacts | None  # its facts, as decided on


def judged(
    store: RunStore,
    event: GateEvent,
    options: Options,
    protected: Protected,
    folders: Sequence[str],
    owner: str | None = None,
    more: Sequence[GateEvent] = (),
    seen: list[str] | None = None,
) -> Judged:
    """One hook event decided against the store, and its `gate` event written: the one
    path of the command hook and of `handrail serve`'s HTTP hooks. `owner`: only that
    person's runs are found (a server's token); None: every run of the store. `more`:
    further actions of the same tool call (a patch naming several files), decided in
    order; the first one not allowed is the decision, and the one event written.
    `seen` gets the workspace of the run found, if any. A decision whose event cannot
    be written is raised as `Unrecorded`, carrying both: it stands all the same. Returned
    with the run and facts the decision was made on."""
    event, more = resolved(event), [resolved(each) for each in more]
    runs = holding(store, folders, owner)  # read once: both questions below are asked of the same rows
    held = strictest(store, folders, owner, event, runs)
    if held is not None:
        if seen is not None:
            seen.extend(run.workspace for run, _ in held)
        return held_to_all(store, held, event, options, protected, more)
    found = session_run(store, folders, owner, event.session, event.run_id, runs)
    if found is not None and seen is not None:
        seen.append(found[0].workspace)
    kinds = {each.kind for each in (event, *more)}
    facts_ = None if found is None else facts(store, found[0], found[1], kinds)
    decision = first_refusal(facts_, (event, *more), options, protected)
    if found is None or facts_ is None:
        return Judged(decision, None, None)
    run = found[0]
    data = decision.record
    if event.session is not None and facts_.bound is None:  # the first session seen binds the run
        data = {
            **(data or {"event": event.kind, "decision": "bind", "session": event.session[:100]}),
            "bind": True,
        }
    if data is not None:
        recorded(store, run, facts_.step_id, data, decision)
    return Judged(decision, run, facts_)


def recorded(
    store: RunStore,
    run: RunRecord,
    step_id: str | None,
    data: Mapping[str, Any],
    decision: Decision,
) -> None:
    """The decision's `gate` event written; one that cannot be (a full or read-only store)
    is raised as `Unrecorded`: the decision stands, its record waits."""
    try:
        record(store, run, step_id, data)
    except Exception as exc:
        raise Unrecorded(decision, run.id, step_id, data, exc) from exc


def resolved(event: GateEvent) -> GateEvent:
    """An edit or read judged by where its path leads: `Action.leads_to`, a link's
    target (os.path.realpath), when it is not the path itself."""
    action = event.action
    if action is None or action.kind not in ("edit", "read") or not action.target:
        return event
    path = os.path.normpath(os.path.join(event.cwd, action.target))
    real = os.path.realpath(path)
    # written in the working folder's own spelling where it is below it or one of its
    # parents, so that a workspace reached through a link of its own is no change
    folder = os.path.normpath(event.cwd)
    while True:
        real_folder = os.path.realpath(folder)
        if inside(real, real_folder):
            leads = os.path.normpath(os.path.join(folder, os.path.relpath(real, real_folder)))
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            leads = real
            break
        folder = parent
    return event if leads == path else event._replace(action=action._replace(leads_to=leads))


def strictest(
    store: RunStore,
    folders: Sequence[str],
    owner: str | None,
    event: GateEvent,
    runs: Sequence[RunRecord] | None = None,
) -> list[Found] | None:
    """The open runs a session is held to all at once: several open runs (not below
    one another) hold the workspace, and the session is bound to none of them and names
    none of them in a run tool call. None otherwise: the session's one run decides.
    `runs`: `holding`'s answer, when the caller read it already."""
    if event.session is None:
        return None
    runs = holding(store, folders, owner) if runs is None else runs
    ids = {run.id for run in runs}
    tops = [run for run in runs if run.parent_id is None or run.parent_id not in ids]
    if len(tops) < 2 or (event.run_id is not None and event.run_id in ids):
        return None
    found: list[Found] = []
    for run in tops:
        events = store.gate_events(run.id, RECENT_EVENTS_READ)
        if bound_session([(e.type, e.data) for e in events]) == event.session:
            return None
        found.append((run, events))
    return [descend(store, each, event.session, event.run_id) for each in found]


def held_to_all(
    store: RunStore,
    held: Sequence[Found],
    event: GateEvent,
    options: Options,
    protected: Protected,
    more: Sequence[GateEvent],
) -> Judged:
    """The event decided by each open run: the first refusal decides, written against
    the run that refused; the session binds to none of them. An allow is written
    against the most recently updated run."""
    judgements = []
    kinds = {each.kind for each in (event, *more)}
    for run, events in held:
        facts_ = facts(store, run, events, kinds)
        judgements.append((run, facts_, first_refusal(facts_, (event, *more), options, protected)))
    run, facts_, decision = next(
        (j for j in judgements if j[2].verdict in ("deny", "block")),
        next((j for j in judgements if j[2].verdict != "allow"), judgements[0]),
    )
    if decision.verdict == "context":  # what the session is told names every run it is held to
        texts = [j[2].text for j in judgements if j[2].verdict == "context"]
        ids = ", ".join(j[1].run_id for j in judgements)
        texts.append(
            f"This session is held to the rules of every open run in this workspace ({ids}) until it "
            "names one: call workflow_resume with that run's runId."
        )
        decision = decision._replace(text="\n\n".join(texts))
    if decision.record is not None:
        data = {**decision.record, "heldBy": len(held)}
        recorded(store, run, facts_.step_id, data, decision)
    return Judged(decision, run, facts_)


class Unrecorded(Exception):
    """A decision made whose `gate` event could not be written (spec/gate.md, "When the
    gate cannot judge"): the hook answers the decision and keeps the event to write later."""

    def __init__(
        self, decision: Decision, run_id: str, step_id: str | None, data: Mapping[str, Any], cause: Exception
    ) -> None:
        super().__init__(f"cannot write the gate event of run {run_id}: {cause}")
        self.decision, self.run_id, self.step_id, self.data = decision, run_id, step_id, data


def first_refusal(
    facts_: RunFacts | None, events: Iterable[GateEvent], options: Options, protected: Protected
) -> Decision:
    """The first decision on `events` (the actions of one tool call) that is not a plain
    allow, else the last."""
    last: Decision | None = None
    for each in events:
        last = decide(facts_, each, options, protected)
        if last.verdict != "allow":
            return last
    assert last is not None, "at least one decision"
    return last


def session_run(
    store: RunStore,
    folders: Sequence[str],
    owner: str | None,
    session: str | None,
    named: str | None = None,
    runs: Sequence[RunRecord] | None = None,
) -> Found | None:
    """The open run of `folders` for a harness session, with its events: the one bound
    to `session`, else one bound to no session yet, else the most recently updated
    (bound to another session: its policy still holds the workspace). A run that waits
    on its branches or child has no step of its own: the session is followed into its
    tree (`descend`). `runs`: `holding`'s answer, when the caller read it already."""
    runs = holding(store, folders, owner) if runs is None else runs
    if not runs:
        return None
    for run in runs:  # a run tool called with a run's id: that run
        if named is not None and run.id == named:
            return descend(store, (run, store.gate_events(run.id, RECENT_EVENTS_READ)), session, named)
    if session is None:
        return descend(store, (runs[0], store.gate_events(runs[0].id, RECENT_EVENTS_READ)), session, named)
    first: Found | None = None
    unbound: Found | None = None
    for run in runs:
        events = store.gate_events(run.id, RECENT_EVENTS_READ)
        bound = bound_session([(e.type, e.data) for e in events])
        if bound == session:
            return descend(store, (run, events), session, named)
        if bound is None and unbound is None:
            unbound = run, events
        if first is None:
            first = run, events
    found = unbound or first
    assert found is not None, "at least one run"
    return descend(store, found, session, named)


def descend(store: RunStore, found: Found, session: str | None, named: str | None) -> Found:
    """The run whose step the session works while `found` waits (its position's
    `waitingOn`): among its open children in its workspace, the one the event names
    (a run tool called with its runId), else one bound to `session`, else one bound to
    no session, else the most recently updated; followed down while that one waits too.
    A waiting run with no such child is returned as it is: its facts say it waits, and
    the gate refuses edits and commands there (runs/gate_decision.py)."""
    for _ in range(TREE_DEPTH):
        run = found[0]
        if "waitingOn" not in run.position:
            return found
        children = [
            sound(child)
            for child in store.list_runs(statuses=ACTIVE, parent_id=run.id, limit=CHILDREN_READ)
            if child.workspace == run.workspace
        ]
        if not children:
            return found
        chosen: Found | None = None
        unbound: Found | None = None
        for child in children:
            events = store.gate_events(child.id, RECENT_EVENTS_READ)
            if named is not None and child.id == named:
                chosen = child, events
                break
            bound = bound_session([(e.type, e.data) for e in events])
            if session is not None and bound == session and chosen is None:
                chosen = child, events
            if bound is None and unbound is None:
                unbound = child, events
        found = chosen or unbound or (children[0], store.gate_events(children[0].id, RECENT_EVENTS_READ))
    return found


def holding(store: RunStore, folders: Sequence[str], owner: str | None = None) -> list[RunRecord]:
    """The open runs whose workspace holds the first of `folders` that one holds, most
    recently updated first."""
    runs = store.list_runs(statuses=ACTIVE, owner=owner, limit=OPEN_RUNS_READ)
    for folder in folders:
        folder = os.path.normpath(folder)
        found = [sound(run) for run in runs if inside(folder, run.workspace)]
        if found:
            return found
    return []


class Tampered(Exception):
    """A run's row no longer matches its seal (store/state_seal.py): the gate cannot
    judge by it, and refuses while it may be active (spec/runs.md)."""


def sound(run: RunRecord) -> RunRecord:
    """`run` as read, or `Tampered` when its row was edited past the store: its step,
    its gate digest or its status may then say anything."""
    if run.tampered:
        raise Tampered(f"run {run.id} was changed outside handrail: " + "; ".join(run.tampered))
    return run


def active_run(store: RunStore, folders: Sequence[str], owner: str | None = None) -> RunRecord | None:
    """The open run whose workspace holds the first of `folders` that one holds; the
    most recently updated when several do."""
    found = holding(store, folders, owner)
    return found[0] if found else None


def facts(
    store: RunStore,
    run: RunRecord,
    events: Sequence[Event] | None = None,
    kinds: Collection[str] | None = None,
) -> RunFacts:
    """The run's facts for a decision on events of `kinds` (None: any). Only a stop reads
    the stops refused in a row, only a prompt or a compaction whether the context was
    compacted (runs/gate_decision.py): for the other events those scans of the recent
    events are not made, and the facts say 0 and False."""
    step = run.position.get("step")
    step = step if isinstance(step, dict) else {}
    step_id = step.get("id") if isinstance(step.get("id"), str) else None
    text = run.gate
    digest = gate_digest.read(text)
    if text is None or digest is None or digest.step_id != step_id:  # before digests, or past the ledger
        text = pinned_digest(store, run)
        digest = gate_digest.read(text)
    assert digest is not None, "a digest just compiled reads back"
    if events is None:
        events = store.gate_events(run.id, RECENT_EVENTS_READ)
    pairs = [(e.type, e.data) for e in events]  # each scan below reads them: made once
    bound = bound_session(pairs)
    stops, compacted = (0, 0), False
    if kinds is None or not {"stop", "prompt", "compact"}.isdisjoint(kinds):
        start = events[-1].seq - RECENT_EVENTS_READ if events else 0
        recent = events if not events or events[0].seq > start else [e for e in events if e.seq > start]
        recent_pairs = pairs if recent is events else [(e.type, e.data) for e in recent]
        stops = stop_counts([(str(e.type), e.step_id, e.data) for e in recent], step_id, bound)
        compacted = compacted_since_prompt(recent_pairs, bound)
    accepted = tuple(e.step_id for e in events if e.type == "accepted" and e.step_id is not None)
    folders = list(digest.folders) or started_with(store, run, events)
    waiting = run.position.get("waitingOn")
    waiting = waiting if isinstance(waiting, dict) else None
    return RunFacts(
        run_id=run.id,
        workflow_id=run.workflow_id,
        goal=run.goal,
        status=str(run.status),
        workspace=run.workspace,
        step_id=step_id,
        step_title=step.get("title") if isinstance(step.get("title"), str) else step_id,
        step_prompt=step.get("prompt") if isinstance(step.get("prompt"), str) else None,
        step_number=digest.number if digest.number is not None else run.accepted + 1,
        step_count=digest.steps,
        accepted=accepted,
        accepted_count=run.accepted,
        policy=gate_digest.policy_of(text),
        stop_refusals=stops[0],
        workflow_folders=tuple(f for f in folders if isinstance(f, str) and f)
        if isinstance(folders, list)
        else (),
        bound=bound,
        compacted=compacted,
        waiting=f"{waiting.get('kind')}:{waiting.get('stepId')}" if waiting is not None else None,
        helper_stop_refusals=stops[1],
    )


def pinned_digest(store: RunStore, run: RunRecord) -> str:
    """The digest of the run's current step compiled from its pinned source: for a row
    that keeps none (or one not of its step)."""
    source = store.get_source(run.source_hash)
    try:
        loaded = json.loads(source) if source is not None else {}
    except (ValueError, RecursionError):
        loaded = {}
    return gate_digest.compiled(loaded if isinstance(loaded, dict) else {}, run.position, ())


def started_with(store: RunStore, run: RunRecord, events: Sequence[Event]) -> Any:
    """The workflow folders the run's tree was started with (its first event's): a
    branch or child run is started by the server, not by a person, so its root's
    hold for it too. Read up the tree at most TREE_DEPTH runs."""
    for _ in range(TREE_DEPTH):
        if events and events[0].seq == 1 and events[0].data.get("workflowFolders"):
            return events[0].data.get("workflowFolders")
        parent = store.get(run.parent_id) if run.parent_id is not None else None
        if parent is None:
            return None
        run, events = parent, store.gate_events(parent.id, 1)
    return None


def record(
    store: RunStore,
    run: RunRecord,
    step_id: str | None,
    data: Mapping[str, Any],
    kind: str = GATE,
) -> None:
    """Append one `gate` event to the run, through the compare-and-set retry every run
    write uses (runs/ledger.py)."""
    durable = not without_fsync(data)
    from handrail.model.runs import EventType, NewEvent, RunUpdate  # lazy: as above
    from handrail.runs.ledger import Ledger  # lazy: only a hook that writes needs it

    listed: list[RunRecord] = [run]

    def attempt() -> None:
        # the run as just listed; a write in between is a conflict, and a retry reads it afresh
        current = listed.pop() if listed else store.get(run.id)
        if current is not None:  # a run deleted meanwhile takes no more events
            store.update(
                current, RunUpdate(), [NewEvent(EventType(kind), step_id, data)], ACTOR, durable=durable
            )

    Ledger.retrying(run.id, attempt)


def without_fsync(data: Mapping[str, Any]) -> bool:
    """A record committed without waiting for the disk (spec/gate.md, "What the records
    survive"): a refusal just answered, or a tool call's after-tool record, that binds
    no session. The agent's action was refused whether or not the record outlives an OS
    crash; a lost refused stop only lowers the count of stops refused in a row, so the
    gate refuses once more, never less; a tool call's record decides nothing (it ends no
    row of refused stops). An outage's record is the only trace of what was answered
    without the store, and a binding decides whose the run is: both wait for the disk."""
    if "bind" in data or data.get("event") == "outage":
        return False
    refusal = data.get("decision") in ("deny", "block")
    return refusal or (data.get("event") == "after-tool" and data.get("decision") == "record")
