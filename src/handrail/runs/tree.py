"""Runs in a tree: the branches of a parallel loop (spec/runs.md, "Runs in a tree").

A run that reaches a parallel loop waits (its position's `waitingOn`, runs/position.py)
and `Tree.after` does the rest, after every write that may move a tree: it opens the
loop's branches in item order, at most `maxParallel` open at once; once every branch
(or `atLeast` of them) completed it accepts the loop on the parent, the results gathered
in item order into the parent's context, and cancels the branches still open.

Each part may run twice, in two servers or after a crash, and still happen once: a
branch's id is derived from its parent, the parent's wait and the item's index, so two
servers opening it make one run; the parent moves on through a compare-and-set write,
so of two branches completing at once exactly one advances it; and reading a waiting
parent settles it again, so a crash between a branch's completion and the parent's
advance heals the next time anyone looks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from handrail.model.codec import json_size
from handrail.model.runs import ACTIVE_STATUSES, EventType, RunRecord, RunStatus
from handrail.model.workflow import Loop
from handrail.runs.ledger import Ledger
from handrail.runs.position import Position
from handrail.runs.shapes import recap, view
from handrail.runs.tree_results import FINISHED, RECAP_STEPS, branch_results, fitted
from handrail.runs.tree_rows import branch_id, branch_row, derived_id
from handrail.runs.tree_writes import CHILDREN_READ, TreeWrites

if TYPE_CHECKING:
    from handrail.model.workflow import Workflow

MAX_DEPTH = 8  # sub-workflows nested this deep at most: a run's ancestors, counted up
LISTED_BRANCHES = 100  # a waiting run's answer lists its first branches, at most
VISITS_SEARCHED = 10_000  # a parent's past visits an open branch is looked for in, at most
R = TypeVar("R")


class Tree:
    """A run's branches opened, gathered and cancelled; over the ledger."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.writes = TreeWrites(ledger)  # the rows a tree writes

    # -- hooks ------------------------------------------------------------------------
    def answered(self, result: R) -> R:
        """A run tool's answer, after what its write means for the run's tree: the run's
        own view again when that moved it, and its branches while it waits for them."""
        if not isinstance(result, dict) or not isinstance(result.get("runId"), str):
            return result
        answer: dict[str, Any] = result
        run = self.ledger.recent.get(answer["runId"]) or self.ledger.store.get(answer["runId"])
        if run is None or not _in_tree(run):
            return result
        if "declined" in answer and run.parent_id is not None:
            self._declined(run, answer)
        settled = self.after(run)
        if settled.version != run.version:
            answer = {**answer, "status": settled.status.value, **view(settled)}
        return cast(R, {**answer, **self.shown(settled)})

    def after(self, run: RunRecord) -> RunRecord:
        """Whatever the run's last write means for its tree; the run as it now stands."""
        if not _in_tree(run):
            return run
        run = self.healed(run)
        if run.status == RunStatus.ABANDONED:
            self.writes.cascade(run)
        run = self._settle(run)
        parent_id = run.parent_id
        for _ in range(64):  # up the tree while each level finishes (depth is bounded)
            if parent_id is None or run.status not in FINISHED:
                break
            parent = self.ledger.store.get(parent_id)
            if parent is None:
                break
            settled = self._settle(parent)
            if settled.status not in FINISHED:
                break
            run, parent_id = settled, settled.parent_id
        fresh = self.ledger.store.get(run.id)
        return fresh if fresh is not None else run

    def orphaned(self, run: RunRecord) -> bool:
        """Whether `run` is an open branch or child its parent no longer waits on (at the
        visit of the step that opened it): what a crash between the parent moving on and
        the cancelling of its branches leaves behind."""
        if run.parent_id is None or run.status not in ACTIVE_STATUSES:
            return False
        parent = self.ledger.store.get(run.parent_id)
        if parent is None:
            return False
        waiting = Position.stored(parent.position).waiting
        index = run.branch or 0
        live = parent.status == RunStatus.ACTIVE and waiting is not None and not waiting.get("failed")
        if live and waiting is not None and branch_id(parent, waiting, index) == run.id:
            return False
        # opened by the parent at a visit of the step it has since moved past (its id
        # says which); a run its parent never derived is not the tree's to cancel
        visits = range(parent.accepted, max(-1, parent.accepted - VISITS_SEARCHED), -1)
        return any(derived_id(parent.id, run.parent_step, k, index) == run.id for k in visits)

    def healed(self, run: RunRecord) -> RunRecord:
        """`run`, cancelled first when its parent no longer waits on it."""
        if not self.orphaned(run):
            return run
        self.writes.abandon(run.id, f"cancelled: its parent run {run.parent_id} no longer waits on it")
        return self.ledger.store.get(run.id) or run

    def shown(self, run: RunRecord) -> dict[str, Any]:
        """What a waiting run's answers add: its branches, each with its holder and status."""
        waiting = Position.stored(run.position).waiting
        if waiting is None:
            return {}
        if waiting.get("kind") != "branches":
            child = self.ledger.store.get(branch_id(run, waiting, 0))
            shown = {k: v for k, v in waiting.items() if k != "context"}
            return {"waitingOn": shown, "children": [branch_row(child)] if child is not None else []}
        children = self._children(run, waiting)
        listed = []
        for index, child in enumerate(children[:LISTED_BRANCHES]):
            if child is None:
                listed.append({"branch": index, "status": "queued"})
                continue
            listed.append(branch_row(child))
        return {"waitingOn": dict(waiting), "branches": listed}

    def in_tree(self, run: RunRecord) -> bool:
        """Whether the run has a parent or children: whether there is a tree to draw."""
        return run.parent_id is not None or bool(self.ledger.store.list_runs(parent_id=run.id, limit=1))

    def root(self, run: RunRecord) -> RunRecord:
        """The run at the top of `run`'s tree (itself when it has no parent)."""
        for _ in range(MAX_DEPTH + 1):
            if run.parent_id is None:
                break
            above = self.ledger.store.get(run.parent_id)
            if above is None:
                break
            run = above
        return run

    def tree(self, run: RunRecord, depth: int = 0) -> dict[str, Any]:
        """The run and its descendants as nested rows, children in branch order, then
        oldest first: what `handrail runs show` and the dashboard draw."""
        row: dict[str, Any] = {
            **branch_row(run),
            "workflowId": run.workflow_id,
            **({"parentStep": run.parent_step} if run.parent_step is not None else {}),
        }
        if run.branch is None:
            del row["branch"]
        waiting = Position.stored(run.position).waiting
        if waiting is not None and run.status in ACTIVE_STATUSES:
            row["waitingOn"] = {k: v for k, v in waiting.items() if k != "context"}
        if depth >= MAX_DEPTH:
            return row
        below = self.ledger.store.list_runs(parent_id=run.id, limit=CHILDREN_READ)
        below.sort(key=lambda r: (r.branch if r.branch is not None else -1, r.created_at))
        if below:
            row["children"] = [self.tree(child, depth + 1) for child in below]
        if waiting is not None and waiting.get("kind") == "branches" and run.status in ACTIVE_STATUSES:
            opened = sum(1 for r in below if r.parent_step == waiting.get("stepId"))
            row["queued"] = max(0, int(waiting.get("count", 0)) - opened)
        return row

    # -- settling a waiting run -------------------------------------------------------
    def _settle(self, run: RunRecord) -> RunRecord:
        for _ in range(16):  # each round moves the run on; a workflow has few parallel loops
            waiting = Position.stored(run.position).waiting
            if waiting is None or run.status != RunStatus.ACTIVE or waiting.get("failed"):
                return run
            kind = waiting.get("kind")
            moved = self._branches(run, waiting) if kind == "branches" else self._child(run, waiting)
            if moved is None:
                return run
            run = moved
        return run

    def _branches(self, run: RunRecord, waiting: Mapping[str, Any]) -> RunRecord | None:
        """Open the branches due, or move the parent on: the parent as written, or None."""
        workflow = self.ledger.pinned(None, run)
        loop = workflow.nodes.get(str(waiting.get("stepId")))
        if not isinstance(loop, Loop) or loop.parallel is None:
            return None
        count = int(waiting.get("count", 0))
        need = min(loop.parallel.at_least or count, count)
        children = self._children(run, waiting)
        while True:
            done = sum(1 for c in children if c is not None and c.status == RunStatus.COMPLETED)
            finished = sum(1 for c in children if c is not None and c.status in FINISHED)
            if done >= need:
                return self._gather(run, waiting, workflow, loop, children)
            if count - (finished - done) < need:
                failed = finished - done
                reason = (
                    f"{failed} of loop `{loop.id}`'s {count} branches were abandoned, so fewer than the "
                    f"{need} it needs can complete"
                )
                return self.writes.fail(run, waiting, children, reason)
            opened = False
            for index in range(min(count, finished + loop.parallel.max_parallel)):
                if children[index] is None:
                    children[index] = self._open(run, waiting, workflow, loop, index)
                    opened = True
            if not opened:
                return None

    def _child(self, run: RunRecord, waiting: Mapping[str, Any]) -> RunRecord | None:
        """Start the sub-workflow's child, or move the parent on once it is done."""
        child = self.ledger.store.get(branch_id(run, waiting, 0))
        workflow_id = str(waiting.get("workflowId"))
        if child is None:
            return self._start_child(run, waiting, workflow_id)
        if child.status == RunStatus.ABANDONED:
            reason = _abandoned_reason(self.ledger.events(child.id))
            said = f"its child run {child.id} of workflow `{workflow_id}` was abandoned: {reason}"
            return self.writes.fail(run, waiting, (), said)
        if child.status != RunStatus.COMPLETED:
            return None
        workflow = self.ledger.pinned(None, run)
        step_id = str(waiting.get("stepId"))
        node = workflow.nodes.get(step_id)
        sub = getattr(node, "subworkflow", None)
        if sub is None:
            return None
        child_workflow = self.ledger.pinned(None, child)
        result = fitted(
            self.ledger,
            run,
            [
                {
                    "runId": child.id,
                    "workflowId": child.workflow_id,
                    "status": child.status.value,
                    "outputs": recap(self.ledger.store.shown_events(child.id, 0), child_workflow)[
                        -RECAP_STEPS:
                    ],
                    "context": dict(child.context),
                }
            ],
        )
        output = f"Child run {child.id} of workflow `{workflow_id}` completed."
        return self.writes.accept(
            run, waiting, workflow, step_id, {sub.results_var: result[0] if result else {}}, output
        )

    def _declined(self, child: RunRecord, answer: Mapping[str, Any]) -> None:
        """A person declined a step of a child run. A sub-workflow's child: the parent's
        step fails with their words, and the child, which nothing waits for any more, is
        cancelled. A parallel branch ends, abandoned with their words, and counts against
        the loop's `atLeast` as any abandoned branch does."""
        parent = self.ledger.store.get(child.parent_id or "")
        waiting = Position.stored(parent.position).waiting if parent is not None else None
        if parent is None or waiting is None:
            return
        issues = answer.get("issues") or ["a person declined its step"]
        if waiting.get("kind") == "branches":
            if child.branch is None or branch_id(parent, waiting, child.branch) != child.id:
                return
            self.writes.abandon(child.id, f"declined: {issues[0]}")
            ended = self.ledger.store.get(child.id)
            if ended is not None:
                self.after(ended)  # the parent opens its next branch, or fails the loop
            return
        if waiting.get("kind") != "child" or branch_id(parent, waiting, 0) != child.id:
            return
        said = f"its child run {child.id} of workflow `{waiting.get('workflowId')}` was declined: {issues[0]}"
        self.writes.fail(parent, waiting, [self.ledger.store.get(child.id)], said)

    def _start_child(self, run: RunRecord, waiting: Mapping[str, Any], workflow_id: str) -> RunRecord | None:
        depth, above, lineage = 0, run, [run.workflow_id]
        while above.parent_id is not None and depth <= MAX_DEPTH:
            found = self.ledger.store.get(above.parent_id)
            if found is None:
                break
            above, depth = found, depth + 1
            lineage.append(above.workflow_id)
        if workflow_id in lineage:
            # workflows that start each other: refused at the first repeat, long before the depth bound
            path = list(dict.fromkeys(reversed(lineage[: lineage.index(workflow_id) + 1])))
            cycle = " → ".join(f"`{w}`" for w in [*path, workflow_id])
            said = f"workflow `{workflow_id}` would start itself again ({cycle}): a cycle is not started"
            return self.writes.fail(run, waiting, (), said)
        if depth >= MAX_DEPTH:
            said = f"runs are nested {MAX_DEPTH} deep, the most there may be: `{workflow_id}` is not started"
            return self.writes.fail(run, waiting, (), said)
        catalog = self.ledger.settings.catalog
        snapshot = catalog() if catalog is not None else None
        if snapshot is None:
            return None  # a read with the catalog at hand starts it (workflow_resume, workflow_continue)
        workflow = snapshot.get(workflow_id)
        if workflow is None:
            return self.writes.fail(
                run, waiting, (), f"workflow `{workflow_id}` is not in the server's catalog"
            )
        context = dict(waiting.get("context") or {})
        size, limit = json_size(context), self.ledger.settings.max_context_bytes
        if size > limit:
            said = (
                f"the context of its child run of workflow `{workflow_id}` would be {size} bytes as JSON, "
                f"over the server's limit of {limit} (maxContextBytes)"
            )
            return self.writes.fail(run, waiting, (), said)
        position, _ = Position((), (), None, None, False).advanced(workflow, context)
        self.ledger.store.put_source(workflow.content_hash, workflow.id, workflow.document)
        made = self.writes.make_below(
            run,
            branch_id(run, waiting, 0),
            (workflow.id, workflow.version, workflow.content_hash),
            f"{run.goal[:1900]} [{waiting.get('stepId')}]",
            context,
            position,
            str(waiting.get("stepId")),
        )
        settled = self.after(made)  # the child may wait for children of its own, or be done
        return self.ledger.store.get(run.id) if settled.status in FINISHED else None

    def _children(self, run: RunRecord, waiting: Mapping[str, Any]) -> list[RunRecord | None]:
        ids = [branch_id(run, waiting, i) for i in range(int(waiting.get("count", 0)))]
        found = {r.id: r for r in self.ledger.store.list_runs(parent_id=run.id, limit=CHILDREN_READ)}
        return [found.get(i) for i in ids]

    def _open(
        self, parent: RunRecord, waiting: Mapping[str, Any], workflow: Workflow, loop: Loop, index: int
    ) -> RunRecord:
        """Branch `index` of the loop, made once whoever asks (its id is derived)."""
        run_id = branch_id(parent, waiting, index)
        context = dict(parent.context)
        from handrail.engine.results import LoopPosition  # the engine's types load with the first loop
        from handrail.expr import lookup  # the conditions' modules load with the first loop

        items = lookup(context, loop.items or "")
        item = items[index] if isinstance(items, list) and index < len(items) else None
        scope = {"loopId": loop.id, "iteration": index + 1, "item": item}
        start = Position(
            Position.stored(parent.position).completed_steps,
            (LoopPosition(loop.id, index + 1),),
            None,
            None,
            False,
            scope=scope,
        )
        position, _ = start.advanced(workflow, context)
        return self.writes.make_below(
            parent,
            run_id,
            (parent.workflow_id, parent.workflow_version, parent.source_hash),
            f"{parent.goal[:1900]} [{loop.id} #{index}]",
            context,
            position,
            loop.id,
            index,
            {"item": item},
        )

    def _gather(
        self,
        run: RunRecord,
        waiting: Mapping[str, Any],
        workflow: Workflow,
        loop: Loop,
        children: Sequence[RunRecord | None],
    ) -> RunRecord:
        """Accept the loop on the parent, its results in item order; cancel the open branches."""
        assert loop.parallel is not None
        results = branch_results(self.ledger, run, workflow, loop, children)
        done = sum(1 for c in children if c is not None and c.status == RunStatus.COMPLETED)
        output = f"{done} of the {len(children)} branches of loop `{loop.id}` completed."
        written = self.writes.accept(
            run, waiting, workflow, loop.id, {loop.parallel.results_var: results}, output
        )
        reason = f"cancelled: loop `{loop.id}` of run {run.id} had the branches it needed"
        for child in children:
            if child is not None and child.status in ACTIVE_STATUSES:
                self.writes.abandon(child.id, reason)
        return written


def _in_tree(run: RunRecord) -> bool:
    """Whether the run takes part in a tree: the usual run costs one look at its position."""
    return run.parent_id is not None or "waitingOn" in run.position or run.status == RunStatus.ABANDONED


def _abandoned_reason(events: Sequence[Any]) -> str:
    for event in reversed(events):
        if event.type == EventType.ABANDONED:
            return str(event.data.get("reason", "no reason given"))
    return "no reason given"
