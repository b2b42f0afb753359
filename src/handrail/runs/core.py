"""start / continue / resume / abandon over the pure engine.

The run row holds the engine's last answer (completedSteps, loop state, step,
guidance) and the run's context; each call replays the engine from there, so the
server, never the client, decides what is done. Every answer is built from what
the store has committed: nothing is acknowledged before it is durable.

`Runs` is assembled from layers (see runs/base.py); this module holds the run's
lifecycle: start, the open runs and a run's recap (resume), abandon.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from handrail.errors import StateError
from handrail.runs.advance import Advance
from handrail.runs.base import (
    MAX_RETRIES,
    OPEN_RUNS_LISTED,
    _not_active,
    event_title,
    merge_context,
    new_run_id,
    summary,
)
from handrail.store.base import ACTIVE_STATUSES, Conflict, Event, NewEvent, RunRecord, RunUpdate

if TYPE_CHECKING:
    from handrail.catalog import Snapshot
    from handrail.model import Workflow
    from handrail.request import Request

__all__ = ["Runs", "merge_context", "new_run_id", "summary"]


class Runs(Advance):
    """The run operations of one server (see RunsBase for `store_factory`)."""

    # -- workflow_start --------------------------------------------------------------
    def start(
        self,
        request: Request,
        workflow: Workflow,
        goal: str,
        workspace: str | None,
        context: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        from handrail.engine import next_step
        from handrail.result_json import next_json
        from handrail.store.sqlite import now

        folder = self.workspace(request, workspace)
        context = dict(context or {})
        baseline = _baseline(workflow, folder)
        first = next_step(workflow, [], context)
        position = next_json(first)  # the run row keeps the engine's answer as workflow_next gives it
        source_hash = self.pins.hash_of(workflow)
        self.store.put_source(source_hash, workflow.id, workflow.document)
        status = "completed" if first.is_complete else "active"
        at = now()
        run = RunRecord(
            id=new_run_id(),
            owner=self.owner(request),
            workspace=folder,
            workflow_id=workflow.id,
            workflow_version=workflow.version,
            source_hash=source_hash,
            goal=goal,
            status=status,
            context=context,
            position=position,
            accepted=0,
            created_at=at,
            updated_at=at,
            version=1,
        )
        events = [
            NewEvent(
                "started",
                data={
                    "workflowId": workflow.id,
                    "workflowVersion": workflow.version,
                    "sourceHash": source_hash,
                    "goal": goal,
                    "workspace": folder,
                    "context": context,
                    **({"baseline": baseline} if baseline is not None else {}),
                },
            )
        ]
        if status == "completed":
            events.append(NewEvent("completed"))
        run = self._remember(self.store.create(run, events))
        return {
            "runId": run.id,
            "status": status,
            "workflowId": workflow.id,
            "workflowVersion": workflow.version,
            "goal": goal,
            **self._view(run),
        }

    # -- what the dashboard reads ----------------------------------------------------
    def listing(
        self,
        request: Request,
        *,
        statuses: Sequence[str] | None = None,
        workflow_id: str | None = None,
        text: str | None = None,
        limit: int = 100,
    ) -> list[RunRecord]:
        """The asking person's runs, most recently updated first, filtered in the store."""
        return self.store.list_runs(
            statuses=statuses, owner=self.owner(request), workflow_id=workflow_id, text=text, limit=limit
        )

    def events(self, run: RunRecord) -> list[Event]:
        return self.store.events(run.id)

    # -- workflow_resume -------------------------------------------------------------
    def open_runs(
        self, request: Request, workspace: str | None, limit: int = OPEN_RUNS_LISTED
    ) -> list[dict[str, Any]]:
        """The caller's open runs in `workspace` (None: in every workspace), latest first."""
        runs = self.store.list_runs(
            workspace=workspace, statuses=ACTIVE_STATUSES, owner=self.owner(request), limit=limit
        )
        return [
            {
                "runId": r.id,
                "workflowId": r.workflow_id,
                "goal": r.goal,
                "status": r.status,
                "currentStep": r.current_step,
                "updatedAt": r.updated_at,
                "workspace": r.workspace,
            }
            for r in runs
        ]

    def resume(
        self, request: Request, snapshot: Snapshot, run_id: str | None, workspace: str | None
    ) -> dict[str, Any]:
        if run_id is None:
            return {"runs": self.open_runs(request, self.workspace(request, workspace))}
        run = self.run(request, run_id)
        workflow = self.pinned(snapshot, run)
        recap = []
        for event in self.store.events(run.id):
            if event.type == "accepted" and event.step_id is not None:
                node = workflow.nodes.get(event.step_id)
                recap.append(
                    {
                        "stepId": event.step_id,
                        "title": event_title(event, node.title if node is not None else event.step_id),
                        "summary": summary(str(event.data.get("output", ""))),
                    }
                )
        result: dict[str, Any] = {
            "runId": run.id,
            "status": run.status,
            "workflowId": run.workflow_id,
            "workflowVersion": run.workflow_version,
            "goal": run.goal,
            "workspace": run.workspace,
            **self._view(run),
            "context": dict(run.context),
            "recap": recap,
        }
        current = snapshot.get(run.workflow_id)
        if current is not None and self.pins.hash_of(current) != run.source_hash:
            result["newerVersion"] = {
                "workflowVersion": current.version,
                "note": f"The workflow file changed since this run started (now version {current.version}); "
                f"this run stays on the version it started on ({run.workflow_version}). Start a new run "
                "to use the newer one.",
            }
        return result

    # -- workflow_abandon ------------------------------------------------------------
    def abandon(self, request: Request, run_id: str, reason: str) -> dict[str, Any]:
        for _ in range(MAX_RETRIES):
            run = self.run(request, run_id)
            if run.status not in ACTIVE_STATUSES:
                raise _not_active(run)
            try:
                written = self._write(
                    run,
                    RunUpdate(status="abandoned"),
                    [NewEvent("abandoned", data={"reason": reason})],
                    self.owner(request),
                )
            except Conflict:
                continue
            return {"runId": run.id, "status": written.status, "workflowId": run.workflow_id}
        raise StateError("the run is changing too fast to write; try again", {"runId": run_id})


def _baseline(workflow: Workflow, folder: str) -> dict[str, Any] | None:
    """Where git stands at the run's start, when a step's git check looks for changes."""
    if not any(
        getattr(c, "changes", False) for node in workflow.nodes.values() for c in getattr(node, "checks", ())
    ):
        return None
    from handrail.checks import git_baseline

    return git_baseline(folder).to_wire()
