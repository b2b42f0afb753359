"""Moving an open run to a newer version of its workflow (spec/runs.md, "Migration").

`carry` is pure: from the run as stored, the version it is pinned to and the newer
one, it works out the run's position on the newer version, or why the run cannot be
carried there (it would be stranded). `Migrations` writes a carried run with its
`migrated` event through the ledger; `handrail check --against-runs` asks `carry`
only, before a changed file is deployed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from handrail.model.errors import HandrailError, InvalidParams, StateError
from handrail.model.runs import ACTIVE_STATUSES, EventType, NewEvent, RunRecord, RunStatus, RunUpdate
from handrail.model.workflow import Loop, Step
from handrail.runs.position import Position

if TYPE_CHECKING:
    from handrail.engine.results import LoopPosition
    from handrail.model.request import Request
    from handrail.model.workflow import Workflow
    from handrail.runs.ledger import Ledger


@dataclass(frozen=True, slots=True)
class Carried:
    """A run's position on the newer version, and what the `migrated` event records."""

    position: Position
    dropped: tuple[str, ...]  # completed steps the newer version no longer has


@dataclass(frozen=True, slots=True)
class Stranded:
    """Why a run cannot move to the newer version."""

    reason: str


def parse_map(pairs: Sequence[str]) -> dict[str, str]:
    """`old=new` pairs (the command line's `--map`) as a mapping; a malformed pair is refused."""
    mapping: dict[str, str] = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        old, new = old.strip(), new.strip()
        if not sep or not old or not new:
            raise InvalidParams(f"--map {pair!r}: give it as OLD-STEP=NEW-STEP")
        if old in mapping and mapping[old] != new:
            raise InvalidParams(f"--map names `{old}` twice, to `{mapping[old]}` and to `{new}`")
        mapping[old] = new
    return mapping


def check_map(mapping: Mapping[str, str], old: Workflow, new: Workflow) -> None:
    """Each pair maps a step or loop of the run's version to one of the newer version."""
    for before, after in mapping.items():
        if before not in old.nodes:
            raise InvalidParams(
                f"--map {before}={after}: `{before}` is no step of {old.id} version {old.version}"
            )
        if after not in new.nodes:
            raise InvalidParams(
                f"--map {before}={after}: `{after}` is no step of {new.id} version {new.version}"
            )


def carry(run: RunRecord, old: Workflow, new: Workflow, mapping: Mapping[str, str]) -> Carried | Stranded:
    """Where `run` (pinned to `old`) stands on `new`: its completed steps and running loops
    renamed by `mapping`, then the engine asked for the next step with the run's context,
    which must be the run's current step (renamed). Otherwise the run is stranded."""
    if run.status not in ACTIVE_STATUSES:
        return Stranded(f"the run is {run.status}; only open runs move")
    if run.parent_id is not None:
        what = f"branch {run.branch} of" if run.branch is not None else "the child run of"
        return Stranded(
            f"it is {what} step `{run.parent_step}` of run {run.parent_id}; a run below another "
            "stays on the version it started on (migrate the run at the top of its tree)"
        )
    try:
        here = Position.stored(run.position)
    except HandrailError as exc:
        return Stranded(exc.message)
    if here.waiting is not None:
        return _waiting_kept(run, here, old, new, mapping)
    current = here.step_id
    target = mapping.get(current, current) if current is not None else None
    if current is not None and target is not None:
        node = new.nodes.get(target)
        if node is None:
            hint = (
                "" if current in mapping else f" (map it to a step of the newer version: --map {current}=NEW)"
            )
            return Stranded(f"its current step `{current}` is not in version {new.version}{hint}")
        if not isinstance(node, Step):
            return Stranded(f"its current step `{current}` is a loop in version {new.version}, not a step")
    loops = _loops(here.loops, old, new, mapping)
    if isinstance(loops, Stranded):
        return loops
    completed, dropped = _completed(here.completed_steps, new, mapping)
    try:
        moved, result = Position(completed, loops, None, None, False).advanced(new, run.context)
    except HandrailError as exc:  # the engine's own check of the carried state
        return Stranded(f"its state does not fit version {new.version}: {exc.message}")
    if moved.step_id != target:
        there = f"at step `{moved.step_id}`" if moved.step_id is not None else _idle(result.is_complete)
        where = f"at step `{target}`" if target is not None else "waiting for context"
        return Stranded(f"in version {new.version} the run would be {there}, not {where} as now")
    if run.status == RunStatus.AWAITING_APPROVAL and current is not None:
        refused = _approval_kept(current, old, new, mapping)
        if refused is not None:
            return refused
    return Carried(moved, dropped)


def _waiting_kept(
    run: RunRecord, here: Position, old: Workflow, new: Workflow, mapping: Mapping[str, str]
) -> Carried | Stranded:
    """A run waiting on its branches or child keeps that wait as stored: the count of
    branches and their ids were fixed when it began, whatever its context says now. The
    step it waits on must be in the newer version under its id, as the same kind."""
    waited = str(here.waiting.get("stepId")) if here.waiting is not None else ""
    kind = here.waiting.get("kind") if here.waiting is not None else None
    what = "branches of loop" if kind == "branches" else "child run of step"
    waiting = f"it waits on the {what} `{waited}`"
    if mapping.get(waited, waited) != waited:
        return Stranded(f"{waiting}, which the --map renames; its open runs name it by its id")
    was, now = old.nodes.get(waited), new.nodes.get(waited)
    if now is None:
        return Stranded(f"{waiting}, which version {new.version} does not have")
    if kind == "branches":
        same = (
            isinstance(was, Loop)
            and isinstance(now, Loop)
            and now.parallel is not None
            and was.kind == now.kind
        )
    else:
        before, after = getattr(was, "subworkflow", None), getattr(now, "subworkflow", None)
        same = before is not None and after is not None and before.workflow_id == after.workflow_id
    if not same:
        return Stranded(f"{waiting}, which is of another kind in version {new.version}")
    loops = _loops(here.loops, old, new, mapping)
    if isinstance(loops, Stranded):
        return loops
    completed, dropped = _completed(here.completed_steps, new, mapping)
    return Carried(replace(here, completed_steps=completed, loops=loops), dropped)


def _completed(
    steps: Sequence[str], new: Workflow, mapping: Mapping[str, str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The completed steps renamed by `mapping` that `new` has (in order, once each), and
    those it has not."""
    renamed = [mapping.get(s, s) for s in steps]
    completed = tuple(dict.fromkeys(s for s in renamed if s in new.nodes))
    return completed, tuple(s for s, r in zip(steps, renamed, strict=True) if r not in new.nodes)


def _loops(
    running: Sequence[LoopPosition], old: Workflow, new: Workflow, mapping: Mapping[str, str]
) -> tuple[LoopPosition, ...] | Stranded:
    """The running loops renamed, each still a loop of the same kind, iteration kept."""
    carried: list[LoopPosition] = []
    for loop in running:
        name = mapping.get(loop.id, loop.id)
        was, now = old.nodes.get(loop.id), new.nodes.get(name)
        if not isinstance(now, Loop):
            return Stranded(
                f"it is in iteration {loop.iteration} of loop `{loop.id}`, "
                f"which version {new.version} does not have"
            )
        if isinstance(was, Loop) and was.kind != now.kind:
            return Stranded(
                f"it is in iteration {loop.iteration} of loop `{loop.id}`, a {was.kind} loop "
                f"that is a {now.kind} loop in version {new.version}: its state cannot be carried"
            )
        carried.append(replace(loop, id=name))  # its iteration kept
    return tuple(carried)


def _approval_kept(current: str, old: Workflow, new: Workflow, mapping: Mapping[str, str]) -> Stranded | None:
    """A run waiting for a person stays waiting on the same step, under the same rule:
    the pending approval's events name the step by its id."""
    waiting = f"it waits for a person's approval of step `{current}`"
    if mapping.get(current, current) != current:
        return Stranded(f"{waiting}, which version {new.version} renames; decide the approval first")
    was, now = old.nodes.get(current), new.nodes.get(current)
    if not isinstance(was, Step) or not isinstance(now, Step) or was.approval != now.approval:
        return Stranded(
            f"{waiting}, whose approvers differ in version {new.version}; decide the approval first"
        )
    if now.confirmation is False:
        return Stranded(
            f"{waiting}, which version {new.version} no longer asks for; decide the approval first"
        )
    return None


def _idle(complete: bool) -> str:
    return "complete" if complete else "waiting for context"


class Migrations:
    """`handrail runs migrate`: open runs moved to the newer version, each in one write."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def migrate(
        self,
        request: Request,
        run_id: str,
        new: Workflow,
        mapping: Mapping[str, str],
        *,
        person: str,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Move the run to `new`, or raise `MigrationRefused` naming why not.
        The asking person's runs only (another's is not found); an agent may move none."""
        if request.scope == "agent":
            raise MigrationRefused(run_id, "an agent's token may not migrate runs; a person does")

        def once() -> dict[str, Any]:
            run = self.ledger.run(request, run_id)
            if run.status not in ACTIVE_STATUSES:
                raise MigrationRefused(run_id, f"the run is {run.status}; only open runs move")
            if run.workflow_id != new.id:
                raise MigrationRefused(
                    run_id, f"the run follows workflow `{run.workflow_id}`, not `{new.id}`"
                )
            old = self.ledger.pinned(None, run)
            check_map(mapping, old, new)
            outcome = {
                "runId": run.id,
                "from": {"workflowVersion": run.workflow_version, "sourceHash": run.source_hash},
                "to": {"workflowVersion": new.version, "sourceHash": new.content_hash},
            }
            if run.source_hash == new.content_hash:
                return {**outcome, "status": run.status.value, "migrated": False, "step": _step(run.position)}
            carried = carry(run, old, new, mapping)
            if isinstance(carried, Stranded):
                raise MigrationRefused(run_id, carried.reason)
            data: dict[str, Any] = {
                **outcome,
                "map": dict(mapping),
                "person": person,
                "step": carried.position.step_id,
                **({"dropped": list(carried.dropped)} if carried.dropped else {}),
            }
            data.pop("runId")
            position = carried.position.to_stored()
            if dry_run:
                return {
                    **outcome,
                    "status": run.status.value,
                    "migrated": False,
                    "dryRun": True,
                    "step": _step(position),
                }
            self.ledger.store.put_source(new.content_hash, new.id, new.document)
            change = RunUpdate(position=position, workflow_version=new.version, source_hash=new.content_hash)
            event = NewEvent(EventType.MIGRATED, None, data)  # of the run, not of a step
            written = self.ledger.write(run, change, [event], person)
            return {
                **outcome,
                "status": written.status.value,
                "migrated": True,
                "step": _step(written.position),
            }

        return self.ledger.retrying(run_id, once)


def summary(data: Mapping[str, Any]) -> str:
    """A `migrated` event in words, for `handrail runs show` and the dashboard."""
    before, after = data.get("from") or {}, data.get("to") or {}
    text = f"moved from version {before.get('workflowVersion')} to {after.get('workflowVersion')}"
    if data.get("step"):
        text += f", at step {data['step']}"
    renamed = data.get("map") or {}
    if renamed:
        text += "; renamed " + ", ".join(f"{old} → {new}" for old, new in renamed.items())
    if data.get("dropped"):
        text += "; dropped " + ", ".join(str(s) for s in data["dropped"])
    if data.get("person"):
        text += f"; by {data['person']}"
    return text


def _step(position: Mapping[str, Any]) -> str | None:
    step = position.get("step")
    return str(step["id"]) if isinstance(step, Mapping) and "id" in step else None


class MigrationRefused(StateError):
    """A run that cannot move to the newer version, and why (the message names both)."""

    def __init__(self, run_id: str, reason: str) -> None:
        super().__init__(f"run {run_id} cannot migrate: {reason}", {"runId": run_id, "reason": reason})
