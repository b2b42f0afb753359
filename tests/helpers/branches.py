"""Branches of a parallel loop written straight through the store, as the run layer
writes them (tests/.../tree-contract: `parent_id`, `parent_step`, `branch` = the item's
index, the parent's owner, workspace, workflow and source), for the claim tests that do
not need the loop itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from handrail.engine import next_step
from handrail.model.runs import EventType, NewEvent, RunRecord, RunStatus
from handrail.model.workflow import Workflow
from handrail.runs.ledger import new_run_id
from handrail.runs.position import Position
from handrail.store.base import RunStore
from handrail.store.rows import now


def write_branches(
    store: RunStore, parent: RunRecord, workflow: Workflow, items: Sequence[Any], step: str = "each"
) -> list[RunRecord]:
    """One active branch per item, nobody holding it, at the workflow's first step with
    the item in its context (`item`)."""
    made = []
    for index, item in enumerate(items):
        context = {**parent.context, "item": item}
        at = now()
        run = RunRecord(
            id=new_run_id(),
            owner=parent.owner,
            workspace=parent.workspace,
            workflow_id=parent.workflow_id,
            workflow_version=parent.workflow_version,
            source_hash=parent.source_hash,
            goal=f"{parent.goal} [{index}]",
            status=RunStatus.ACTIVE,
            context=context,
            position=Position.of(next_step(workflow, [], context)).to_stored(),
            accepted=0,
            created_at=at,
            updated_at=at,
            version=1,
            parent_id=parent.id,
            parent_step=step,
            branch=index,
        )
        event = NewEvent(EventType.STARTED, data={"workflowId": parent.workflow_id, "branch": index})
        made.append(store.create(run, [event]))
    return made
