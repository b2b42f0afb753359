"""The rows a tree of runs writes (runs/tree.py): a branch or a child made below its
parent, the parent's waiting step accepted or failed, runs cancelled down the tree.
Each write is made once whoever else tries it at the same moment: a child's id is
derived, and the parent moves through the ledger's compare-and-set retry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from handrail.model.runs import ACTIVE_STATUSES, EventType, NewEvent, RunRecord, RunStatus, RunUpdate
from handrail.runs import machine
from handrail.runs.ledger import Ledger, new_run
from handrail.runs.position import Position, merge_context

if TYPE_CHECKING:
    from handrail.model.workflow import Workflow

ACTOR = "handrail"  # the actor of the events the tree itself writes
CHILDREN_READ = 5000  # a parent's children read at once, at most
INHERITED = ("approvalChannels", "workflowFolders")  # copied from a parent's `started` event


class TreeWrites:
    """A tree's writes, over the ledger."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def create(self, run: RunRecord, events: Sequence[NewEvent]) -> RunRecord:
        """A child run, made once whoever asks (its id is derived)."""
        try:
            return self.ledger.create(run, events)
        except Exception:
            made = self.ledger.store.get(run.id)  # another server made it first
            if made is None:
                raise
            return made

    def inherited(self, parent: RunRecord) -> dict[str, Any]:
        """What a run below `parent` keeps of the server that started the tree: the approval
        channels it took and the workflow folders the gate protects, from the parent's
        `started` event (which has them from its own parent, up to the root)."""
        first = next((e for e in self.ledger.store.gate_events(parent.id, 1) if e.seq == 1), None)
        if first is None or first.type != EventType.STARTED:
            return {}
        return {k: first.data[k] for k in INHERITED if k in first.data}

    def make_below(
        self,
        parent: RunRecord,
        run_id: str,
        pinned: tuple[str, str, str],
        goal: str,
        context: Mapping[str, Any],
        position: Position,
        step: str,
        branch: int | None = None,
        more: Mapping[str, Any] | None = None,
    ) -> RunRecord:
        """Make run `run_id` below `parent` at its `step`, now, on the workflow `pinned`
        (id, version, source hash), with its `started` event (and `completed` when its
        position is already past its last step)."""
        more = {**(more or {}), **self.inherited(parent)}
        below = (parent.id, step, branch)
        run, events = new_run(
            run_id, parent.owner, parent.workspace, pinned, goal, context, position, more, below
        )
        return self.create(run, events)

    def accept(
        self,
        run: RunRecord,
        waiting: Mapping[str, Any],
        workflow: Workflow,
        step_id: str,
        changes: Mapping[str, Any],
        output: str,
    ) -> RunRecord:
        """The step the parent waited on accepted, `changes` merged into its context; once,
        whoever else tries at the same moment (a compare-and-set write)."""

        def once() -> RunRecord:
            fresh = self.still_waiting(run.id, waiting)
            if fresh is None:
                return self.ledger.store.get(run.id) or run  # another server moved it on
            position = Position.stored(fresh.position)
            context = merge_context(fresh.context, changes)
            after, _ = replace(position, waiting=None).advanced(workflow, context, done=step_id)
            node = workflow.nodes.get(step_id)
            shown = {"title": node.title} if node is not None else {}
            events = [NewEvent(EventType.ACCEPTED, step_id, {"output": output, **shown})]
            if after.is_complete:
                events.append(NewEvent(EventType.COMPLETED))
            change = RunUpdate(context=context, position=after.to_stored(), accepted=fresh.accepted + 1)
            return self.ledger.write(fresh, change, events, ACTOR)

        return self.ledger.retrying(run.id, once)

    def fail(
        self, run: RunRecord, waiting: Mapping[str, Any], children: Sequence[RunRecord | None], reason: str
    ) -> RunRecord:
        """The parent's step fails: a `rejected` event, and the run waits on with the reason."""

        def once() -> RunRecord:
            fresh = self.still_waiting(run.id, waiting)
            if fresh is None:
                return self.ledger.store.get(run.id) or run
            position = Position.stored(fresh.position)
            guidance = {
                **(position.guidance or {}),
                "prompt": f"This run's step `{waiting.get('stepId')}` failed: {reason}. Abandon the run "
                "(workflow_abandon) and start a new one to try again.",
            }
            failed = replace(position, waiting={**waiting, "failed": reason}, guidance=guidance)
            data = {"output": "", "issues": [reason], "suggestions": []}
            event = NewEvent(EventType.REJECTED, str(waiting.get("stepId")), data)
            return self.ledger.write(fresh, RunUpdate(position=failed.to_stored()), [event], ACTOR)

        written = self.ledger.retrying(run.id, once)
        for child in children:
            if child is not None and child.status in ACTIVE_STATUSES:
                self.abandon(child.id, f"cancelled: {reason}")
        return written

    def still_waiting(self, run_id: str, waiting: Mapping[str, Any]) -> RunRecord | None:
        fresh = self.ledger.store.get(run_id)
        if fresh is None or fresh.status != RunStatus.ACTIVE:
            return None
        return fresh if Position.stored(fresh.position).waiting == waiting else None

    def cascade(self, run: RunRecord) -> None:
        """An abandoned run's open children are abandoned too, and theirs."""
        reason = f"cancelled: its parent run {run.id} was abandoned"
        store = self.ledger.store
        for child in store.list_runs(parent_id=run.id, statuses=ACTIVE_STATUSES, limit=CHILDREN_READ):
            self.abandon(child.id, reason)

    def abandon(self, run_id: str, reason: str) -> None:
        def once() -> RunRecord | None:
            found = self.ledger.store.get(run_id)
            if found is None or not machine.allows(found.status, EventType.ABANDONED):
                return None
            event = NewEvent(EventType.ABANDONED, data={"reason": reason})
            return self.ledger.write(found, RunUpdate(), [event], ACTOR)

        written = self.ledger.retrying(run_id, once)
        if written is not None:
            self.cascade(written)
