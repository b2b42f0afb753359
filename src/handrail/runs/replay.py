"""A run's state derived again from its events, and compared with its row (spec/runs.md,
"The row and its log"): what `handrail runs verify` and the run's page add to the
chain and the seal.

The seal (store/state_seal.py) holds no secret: whoever can write the store can edit a
row and seal it again. The events cannot be edited so cheaply, since their chain ends
at the head the passkey signatures cover. So the row is judged by what its events say:
the status the transition table gives them, the owner, workspace and goal the run
started with, the workflow it started on or last migrated to, the steps accepted and, replayed
through the engine on the pinned workflow, its position, loop state and context.

A run in a tree (its parent moves with its children, whose context changes its events
do not hold) and a migrated run (the migration maps steps by hand) are replayed up to
the event that moves them so; their position is then left to the seal, and said so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from handrail.model.errors import HandrailError
from handrail.model.runs import Event, EventType, RunRecord, RunStatus
from handrail.runs import gate_digest, machine
from handrail.runs.pinning import Pins
from handrail.runs.position import Position, merge_context
from handrail.runs.tree_writes import ACTOR as TREE_ACTOR  # a parent moved on by its children
from handrail.store.chain import Break

if TYPE_CHECKING:
    from handrail.model.workflow import Workflow
    from handrail.store.base import RunStore

# the events that change the context the engine is asked with (a rejected output's
# changes are kept on its event, not in the run)
CONTEXT_EVENTS = (EventType.CONTEXT, EventType.ACCEPTED, EventType.AWAITING_APPROVAL)


@dataclass(slots=True)
class Derived:
    """What a run's events say its row holds; a field None: its events do not say (an
    earlier handrail's `started` event); `position` None: not replayed (`why`)."""

    status: RunStatus | None = None
    owner: str | None = None
    workspace: str | None = None
    goal: str | None = None
    workflow_id: str | None = None
    workflow_version: str | None = None
    source_hash: str | None = None
    accepted: int = 0
    position: dict[str, Any] | None = None
    context: dict[str, Any] | None = None  # given with the position: a tree's is moved by its children
    why: list[str] = field(default_factory=list)
    problem: str | None = None  # the events themselves cannot be replayed


def derive(events: Sequence[Event], pinned: Any) -> Derived:
    """The run's state from `events`; `pinned(source_hash)` gives the compiled workflow."""
    out = Derived()
    if not events or events[0].type != EventType.STARTED:
        out.problem = "its first event is not `started`"
        return out
    first = events[0].data
    out.owner, out.workspace = events[0].actor, _text(first.get("workspace"))
    out.workflow_id, out.workflow_version = (
        _text(first.get("workflowId")),
        _text(first.get("workflowVersion")),
    )
    out.source_hash, out.goal = _text(first.get("sourceHash")), _text(first.get("goal"))
    context: dict[str, Any] = dict(first.get("context") or {})
    position: Position | None = None
    workflow: Workflow | None = None
    if first.get("parentId") is not None:
        out.why.append("it is a run of a tree, moved by its children")
    else:
        try:
            workflow = pinned(out.source_hash)
            position = Position((), (), None, None, False).advanced(workflow, context)[0]
        except HandrailError as exc:
            out.why.append(f"its workflow cannot be read ({exc.message})")
    status: RunStatus | None = None
    for e in events:
        try:
            kind = EventType(e.type)
        except ValueError:
            out.problem = f"event {e.seq}'s type `{e.type}` is not one handrail writes"
            return out
        status = machine.after(status, [kind])
        if status is None:
            out.problem = f"event {e.seq} ({e.type}) cannot happen where the events before it leave the run"
            return out
        if kind == EventType.ACCEPTED:
            out.accepted += 1
        if kind == EventType.MIGRATED:
            moved = e.data.get("to")
            if isinstance(moved, Mapping):
                out.workflow_version = _text(moved.get("workflowVersion"))
                out.source_hash = _text(moved.get("sourceHash"))
            if position is not None:
                position = None
                out.why.append(f"it migrated at event {e.seq}")
        changes = e.data.get("contextChanges")
        if kind in CONTEXT_EVENTS and isinstance(changes, Mapping) and changes:
            context = merge_context(context, changes)
        if position is None or workflow is None or kind == EventType.STARTED:
            continue
        if e.actor == TREE_ACTOR and kind in (EventType.ACCEPTED, EventType.REJECTED):
            position = None
            out.why.append(f"its children moved it at event {e.seq}")
            continue
        position = _moved(position, workflow, context, kind, e)
        if position is not None and position.waiting is not None:
            position = None
            out.why.append(f"it waits for runs of its tree from event {e.seq}")
    out.status = status
    out.position = position.to_stored() if position is not None else None
    out.context = context if position is not None else None
    return out


def _moved(
    position: Position, workflow: Workflow, context: Mapping[str, Any], kind: EventType, e: Event
) -> Position:
    """Where one event leaves the position, as runs/advance.py and runs/decisions.py move it."""
    if kind == EventType.ACCEPTED:
        return position.advanced(workflow, context, done=e.step_id)[0]
    if kind == EventType.CONTEXT and e.data.get("contextChanges"):
        return position.advanced(workflow, context)[0]
    return position


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def differences(run: RunRecord, derived: Derived) -> list[str]:
    """Each field of the row that its events do not give, in words; empty when all match."""
    said: list[str] = []
    pairs = (
        ("status", str(run.status), derived.status and str(derived.status)),
        ("owner", run.owner, derived.owner),
        ("workspace", run.workspace, derived.workspace),
        ("goal", run.goal, derived.goal),
        ("workflow", run.workflow_id, derived.workflow_id),
        ("workflow version", run.workflow_version, derived.workflow_version),
        ("source hash", run.source_hash, derived.source_hash),
        ("accepted", run.accepted, derived.accepted),
    )
    for name, row, events in pairs:
        if events is not None and row != events:  # None: an earlier handrail's events do not say
            said.append(f"{name} is {_short(row)} in the row, {_short(events)} by its events")
    if derived.position is not None:
        said += _position_differences(dict(run.position), derived.position)
    if derived.context is not None and dict(run.context) != derived.context:
        keys = sorted(
            k for k in {*run.context, *derived.context} if run.context.get(k) != derived.context.get(k)
        )
        said.append(f"context's {', '.join(f'`{k}`' for k in keys[:10])} is not what its events give")
    return said


def _position_differences(row: dict[str, Any], events: dict[str, Any]) -> list[str]:
    said: list[str] = []
    step, replayed = _step_id(row), _step_id(events)
    if step != replayed:
        said.append(f"position is at step {_short(step)} in the row, at {_short(replayed)} by its events")
    if row.get("completedSteps") != events.get("completedSteps"):
        said.append(
            f"position's completed steps are {_short(row.get('completedSteps'))} in the row, "
            f"{_short(events.get('completedSteps'))} by its events"
        )
    if row.get("state") != events.get("state"):
        said.append(
            f"loop state is {_short(row.get('state'))} in the row, "
            f"{_short(events.get('state'))} by its events"
        )
    if not said and row != events:
        keys = sorted(k for k in {*row, *events} if row.get(k) != events.get(k))
        said.append(f"position's {', '.join(keys)} is not what its events give")
    return said


def _digest_differences(
    store: RunStore, run: RunRecord, position: Mapping[str, Any], started: Event
) -> list[str]:
    """The row's gate digest against the one its replayed step gives: a hook decides by
    the digest, so a loosened one resealed would otherwise pass for the step's rules."""
    text = store.get_source(str(run.source_hash))
    try:
        document = json.loads(text) if text is not None else None
    except (ValueError, RecursionError):
        document = None
    if not isinstance(document, dict):
        return ["its pinned workflow source cannot be read to check the gate digest"]
    given = started.data.get("workflowFolders")
    folders = given if isinstance(given, list) else gate_digest.folders_of(run.gate)
    if gate_digest.compiled(document, position, folders) == gate_digest.unanchored(run.gate):
        return []
    return ["the gate digest (the step's rules a hook decides by) is not what its events give"]


def _step_id(position: Mapping[str, Any]) -> str | None:
    step = position.get("step")
    return str(step.get("id")) if isinstance(step, Mapping) else None


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else f"`{value}`"
    return text if len(text) <= 80 else text[:77] + "..."


def replay_break(
    store: RunStore, run: RunRecord, events: Sequence[Event], pins: Pins | None = None
) -> Break | None:
    """`runs verify`'s replay: the row against its events, every field that differs named."""
    pins = pins or Pins()

    def pinned(source_hash: str | None) -> Workflow:
        return pins.workflow(str(source_hash), None, store)

    derived = derive(events, pinned)
    if derived.problem is not None:
        return Break(run.id, 0, f"its events cannot be replayed: {derived.problem}")
    said = differences(run, derived)
    if derived.position is not None and run.gate is not None and run.source_hash:
        said += _digest_differences(store, run, derived.position, events[0])
    if not said:
        return None
    return Break(run.id, 0, "the run row is not what its events give: " + "; ".join(said))
