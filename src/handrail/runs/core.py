"""start / continue / resume / abandon over the pure engine.

The run row holds the engine's last answer (completedSteps, loop state, step,
guidance) and the run's context; each call replays the engine from there, so the
server, never the client, decides what is done. Every answer is built from what
the store has committed: nothing is acknowledged before it is durable.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from handrail import budget
from handrail.errors import InvalidParams, RunNotActive, RunNotFound, StateError, StepNotCurrent
from handrail.limits import MAX_CONTEXT_BYTES
from handrail.runs.pinning import Pins
from handrail.store.base import ACTIVE_STATUSES, LOCAL_OWNER, Conflict, NewEvent, RunRecord, RunUpdate

if TYPE_CHECKING:
    from handrail.catalog import Snapshot
    from handrail.checks import Baseline, CheckConfig, CheckResult
    from handrail.model import Workflow
    from handrail.store import RunStore

log = logging.getLogger("handrail.runs")

# Set by a transport, per request, to the person asking (contextvars follow threads and
# tasks); unset, every run belongs to the server's one owner.
REQUEST_OWNER: ContextVar[str | None] = ContextVar("handrail_request_owner", default=None)

RECAP_CHARS = 300  # how much of each accepted output a resumed run's recap shows
MAX_RETRIES = 8  # compare-and-set retries when another writer touched the run meanwhile
OPEN_RUNS_LISTED = 20
RECENT_RUNS = 256  # runs whose last write this process keeps, to skip a read on the next one


def new_run_id() -> str:
    return "run_" + secrets.token_hex(16)  # 128 random bits


def merge_context(context: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """The run's context with `changes` applied; a key set to null is removed."""
    merged = dict(context)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def _root_folder(uri: Any) -> str | None:
    """The local folder a `file://` root URI names, if it is one."""
    if not isinstance(uri, str) or not uri.startswith("file://"):
        return None
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    if parsed.netloc not in ("", "localhost"):
        return None
    path = os.path.normpath(unquote(parsed.path))
    return path if os.path.isabs(path) and os.path.isdir(path) else None


def summary(output: str) -> str:
    text = " ".join(output.split())
    return text if len(text) <= RECAP_CHARS else text[: RECAP_CHARS - 1].rstrip() + "…"


class Runs:
    """The run operations of one server. `store_factory` opens the store on first use,
    so a server that nobody asks about runs never touches the database."""

    def __init__(
        self,
        store_factory: Callable[[], RunStore],
        *,
        owner: str = LOCAL_OWNER,
        database_file: str | None = None,
    ) -> None:
        """`database_file`: the SQLite file, when there is one; a server looks for it before
        listing open runs at start-up, so that it never creates a database nobody uses."""
        self._store_factory = store_factory
        self.database_file = database_file
        self._store: RunStore | None = None
        self.default_owner = owner
        self.pins = Pins()
        self._root: str | None = None  # the client's first root (see set_roots)
        self._recent: dict[str, RunRecord] = {}  # runs as this process last wrote them
        self.max_context_bytes = MAX_CONTEXT_BYTES  # the service sets its own limit
        self._opening = threading.Lock()
        self.check_config: CheckConfig | None = None  # the service sets the server's own

    @property
    def store(self) -> RunStore:
        if self._store is None:
            with self._opening:  # HTTP serves from several threads: open one store, not two
                if self._store is None:
                    self._store = self._store_factory()
        return self._store

    def owner(self) -> str:
        """Who is asking: the person the transport set for this request (issue 17: the one
        a bearer token names), else the server's one owner."""
        return REQUEST_OWNER.get() or self.default_owner

    def _remember(self, run: RunRecord) -> RunRecord:
        with self._opening:
            recent = self._recent
            recent.pop(run.id, None)
            recent[run.id] = run
            if len(recent) > RECENT_RUNS:
                recent.pop(next(iter(recent)), None)
        return run

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    # -- helpers -------------------------------------------------------------------
    def set_roots(self, uris: list[Any]) -> None:
        """The client's MCP roots, as `roots/list` gave them (file:// URIs)."""
        self._root = next((p for p in map(_root_folder, uris) if p is not None), None)

    def default_workspace(self) -> str:
        """The client's first MCP root that is a folder here, else the server's working folder."""
        return self._root or os.getcwd()

    def workspace(self, value: str | None) -> str:
        if value is None:
            return self.default_workspace()
        if not os.path.isabs(value):
            raise InvalidParams(data={"details": f"workspace must be an absolute path, not {value[:200]!r}"})
        path = os.path.normpath(value)
        if not os.path.isdir(path):
            raise InvalidParams(data={"details": f"workspace {path[:200]!r} is not a folder"})
        return path

    def run(self, run_id: str) -> RunRecord:
        found = self.store.get(run_id)
        if found is None or found.owner != self.owner():
            raise RunNotFound(data={"runId": run_id})
        return found

    def pinned(self, snapshot: Snapshot, run: RunRecord) -> Workflow:
        return self.pins.workflow(run.source_hash, snapshot.get(run.workflow_id), self.store)

    @staticmethod
    def _view(run: RunRecord) -> dict[str, Any]:
        """The engine's answer as stored, shaped as in workflow_next (bookkeeping left out)."""
        position = run.position
        view: dict[str, Any] = {
            "step": position.get("step"),
            "guidance": position.get("guidance"),
            "isComplete": bool(position.get("isComplete")),
        }
        if "loop" in position:
            view["loop"] = position["loop"]
        view["progress"] = {"completed": run.accepted}
        return view

    # -- workflow_start --------------------------------------------------------------
    def start(
        self,
        workflow: Workflow,
        goal: str,
        workspace: str | None,
        context: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        from handrail.engine import next_step
        from handrail.result_json import next_json
        from handrail.store.sqlite import now

        folder = self.workspace(workspace)
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
            owner=self.owner(),
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

    # -- workflow_continue -----------------------------------------------------------
    def continue_(
        self,
        snapshot: Snapshot,
        run_id: str,
        step_id: str | None,
        output: str | None,
        changes: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        if output is not None and step_id is None:
            raise InvalidParams(data={"details": "stepId is required with output"})
        seen: RunRecord | None = None
        # first try the run as this process last wrote it (no read): the write's version
        # check catches a run another process moved meanwhile, and a refusal is confirmed
        # against the database before it is given
        cached = self._recent.get(run_id)
        if getattr(self.store, "replicated", False):
            # replicas share this store and move its runs all the time: a copy from our last
            # write would be stale, and its conflict taken for a racing submission
            cached = None
        if cached is not None and cached.owner != self.owner():
            cached = None  # another person's: `run` says it is not found
        elif cached is not None and (cached.status == "awaiting_approval" or output is None):
            cached = None  # a person may have decided, from another process: read it
        for _ in range(MAX_RETRIES):
            run = cached if cached is not None else self.run(run_id)
            if seen is not None and run.accepted != seen.accepted and step_id is not None:
                # another submission was accepted between our read and our write
                raise _not_current(step_id, run, moved=True)
            seen = run
            try:
                return self._continue_once(snapshot, run, step_id, output, changes)
            except Conflict:
                cached = None
                continue
            except (StepNotCurrent, RunNotActive, StateError):
                if cached is None:
                    raise
                cached = seen = None  # judged on a copy: judge again on the database's
        raise StateError("the run is changing too fast to write; try again", {"runId": run_id})

    def _continue_once(
        self,
        snapshot: Snapshot,
        run: RunRecord,
        step_id: str | None,
        output: str | None,
        changes: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        from handrail.engine import next_step, validate_output
        from handrail.result_json import next_json

        if run.status == "awaiting_approval":  # a person approves (or declines) the step first
            return self._awaiting(run, step_id, changes)
        if step_id is not None and output is None:
            return self._after_decision(run, step_id)
        if run.status not in ACTIVE_STATUSES:
            raise _not_active(run)
        workflow = self.pinned(snapshot, run)
        position: Mapping[str, Any] = run.position
        context: Mapping[str, Any] = run.context
        changed = bool(changes)
        if changes:
            context = merge_context(run.context, changes)
            self._check_size(context)
            position = next_json(
                next_step(workflow, position["completedSteps"], context, state=position.get("state"))
            )
        update = RunUpdate(context=context if changed else None, position=position if changed else None)
        change_data = {"contextChanges": dict(changes)} if changes else {}
        if step_id is None or output is None:  # context only
            written = self._write(run, update, [NewEvent("context", data=change_data)], self.owner())
            return {"runId": run.id, "accepted": False, "status": written.status, **self._view(written)}
        current = position.get("step")
        if not isinstance(current, dict) or current.get("id") != step_id:
            raise _not_current(step_id, run, position=position)
        verdict = validate_output(workflow, step_id, output, context)
        if not verdict.valid:
            issues, suggestions = list(verdict.issues), list(verdict.suggestions)
            event = NewEvent(
                "rejected",
                step_id,
                {"output": output, "issues": issues, "suggestions": suggestions, **change_data},
            )
            written = self._write(run, update, [event], self.owner())
            return {
                "runId": run.id,
                "accepted": False,
                "status": written.status,
                "issues": issues,
                "suggestions": suggestions,
                **self._view(written),  # the same step, with its loop where it has one
            }
        # the step's checks (after the rules pass, before acceptance); then a person, when
        # the step's confirmation holds
        results = self._evidence(workflow, run, step_id, context)
        checked = [NewEvent("check", step_id, r.to_event()) for r in results]
        failed = [r.issue() for r in results if not r.passed]
        if failed:
            issues, suggestions = [i for i, _ in failed], [s for _, s in failed]
            event = NewEvent(
                "rejected",
                step_id,
                {"output": output, "issues": issues, "suggestions": suggestions, **change_data},
            )
            written = self._write(run, update, [*checked, event], self.owner())
            return {
                "runId": run.id,
                "accepted": False,
                "status": written.status,
                "issues": issues,
                "suggestions": suggestions,
                "checks": [r.to_event() for r in results],
                **self._view(written),
            }
        if current.get("requireConfirmation"):
            waiting = NewEvent("awaiting_approval", step_id, {"output": output, **change_data})
            written = self._write(
                run,
                RunUpdate(status="awaiting_approval", context=update.context, position=update.position),
                [*checked, waiting],
                self.owner(),
            )
            return self._ask(written, current, output)
        completed = [*position["completedSteps"], step_id]
        result = next_step(workflow, completed, context, state=position.get("state"))
        after = next_json(result)
        status = "completed" if result.is_complete else "active"
        events = [*checked, NewEvent("accepted", step_id, {"output": output, **change_data})]
        if status == "completed":
            events.append(NewEvent("completed"))
        written = self._write(
            run,
            RunUpdate(
                status=status,
                context=context if changed else None,
                position=after,
                accepted=run.accepted + 1,
            ),
            events,
            self.owner(),
        )
        evidence = {"checks": [r.to_event() for r in results]} if results else {}
        return {
            "runId": run.id,
            "accepted": True,
            "status": written.status,
            **evidence,
            **self._view(written),
        }

    def _evidence(
        self, workflow: Workflow, run: RunRecord, step_id: str, context: Mapping[str, Any]
    ) -> list[CheckResult]:
        node = workflow.nodes.get(step_id)
        step_checks = getattr(node, "checks", ())
        if not step_checks:
            return []
        from handrail.checks import CheckConfig, evaluate_checks

        baseline = None
        if any(getattr(c, "changes", False) for c in step_checks):
            baseline = self._baseline_of(run)
        with _off_the_clock():  # a test suite may take minutes: not the request's budget
            return evaluate_checks(
                step_checks,
                run.workspace,
                context,
                baseline,
                self.check_config or CheckConfig(),
                workflow.origin,
            )

    def _baseline_of(self, run: RunRecord) -> Baseline | None:
        from handrail.checks import Baseline

        for event in self.store.events(run.id):
            if event.type == "started":
                wire = event.data.get("baseline")
                return Baseline.from_wire(wire) if isinstance(wire, Mapping) else None
        return None

    # -- approvals (spec/runs.md, "Approvals") -------------------------------------------------
    def _ask(self, run: RunRecord, step: Mapping[str, Any], output: str) -> dict[str, Any]:
        """Ask the person through the client when it can be asked; else say who must act."""
        from handrail.runs.approvals import REQUEST_APPROVER, Question

        approver = REQUEST_APPROVER.get()
        if approver is not None:
            question = Question(
                run.id, str(step["id"]), str(step.get("title", step["id"])), output, run.workflow_id
            )
            with _off_the_clock():  # a person takes their time
                decision = approver.ask(question)
            if decision is not None:
                return self._decide(
                    run.id, decision.approve, person=decision.person, comment=decision.comment, via="client"
                )
        return self._waiting_answer(run)

    def _pending(self, run: RunRecord) -> tuple[str, str]:
        """(step, output) the run waits on a person for: its last `awaiting_approval` event."""
        for event in reversed(self.store.events(run.id)):
            if event.type == "awaiting_approval" and event.step_id is not None:
                return event.step_id, str(event.data.get("output", ""))
        raise StateError("the run waits for approval but has no step awaiting it", {"runId": run.id})

    def _awaiting(
        self, run: RunRecord, step_id: str | None, changes: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        pending, output = self._pending(run)
        if step_id is not None and step_id != pending:
            raise _not_current(step_id, run)
        if changes:
            raise InvalidParams(
                data={
                    "details": "the run is waiting for a person to approve its step; its context "
                    "cannot change until they decide"
                }
            )
        step = run.position.get("step")
        if isinstance(step, Mapping):
            return self._ask(run, step, output)
        return self._waiting_answer(run)

    def _waiting_answer(self, run: RunRecord) -> dict[str, Any]:
        step = run.position.get("step")
        step_id = step.get("id") if isinstance(step, Mapping) else None
        approve = f"handrail runs approve {run.id}"
        decline = f"handrail runs decline {run.id}"
        return {
            "runId": run.id,
            "accepted": False,
            "status": "awaiting_approval",
            "approval": {
                "stepId": step_id,
                "approve": approve + " [--comment TEXT]",
                "decline": decline + " [--comment TEXT]",
                "message": f"The output passed its rules and checks, but step `{step_id}` needs a "
                f"person's approval. Ask the user to run `{approve}` (or `{decline} --comment "
                "...` to send it back). Wait until they have, then call workflow_continue with this "
                "runId and stepId (the output may be left out) to go on.",
            },
            **self._view(run),
        }

    def _after_decision(self, run: RunRecord, step_id: str) -> dict[str, Any]:
        """workflow_continue {runId, stepId} once a person decided on that step."""
        previous = ""  # the type of the event after this one (the log read backwards)
        for event in reversed(self.store.events(run.id)):
            if event.step_id == step_id and event.type == "accepted":
                previous = "accepted"
                continue  # an approval is written just before the acceptance it gives
            if event.step_id == step_id and event.type in ("approved", "declined"):
                if previous == "accepted" and event.type == "declined":
                    break
                if event.type == "approved":
                    return {
                        "runId": run.id,
                        "accepted": True,
                        "status": run.status,
                        "approved": _decision_data(event.data),
                        **self._view(run),
                    }
                issues, suggestions = _declined_issue(event.data)
                return {
                    "runId": run.id,
                    "accepted": False,
                    "status": run.status,
                    "issues": issues,
                    "suggestions": suggestions,
                    **self._view(run),
                }
            if previous == "accepted" or (event.step_id == step_id and event.type == "rejected"):
                break  # the step was last accepted without a person, or sent again since
        raise InvalidParams(data={"details": "output is required with stepId"})

    def approve(
        self, run_id: str, *, person: str, comment: str | None = None, via: str = "cli"
    ) -> dict[str, Any]:
        """A person approves the step the run waits on: it is accepted and the run goes on.
        `via`: where the person decided (`cli`, `dashboard`), recorded on the event."""
        return self._decide(run_id, True, person=person, comment=comment, via=via)

    def decline(
        self, run_id: str, *, person: str, comment: str | None = None, via: str = "cli"
    ) -> dict[str, Any]:
        """A person declines it: the run stays on the step, and the comment is an issue."""
        return self._decide(run_id, False, person=person, comment=comment, via=via)

    def _decide(
        self, run_id: str, approve: bool, *, person: str, comment: str | None, via: str
    ) -> dict[str, Any]:
        from handrail.engine import next_step
        from handrail.result_json import next_json

        for _ in range(MAX_RETRIES):
            run = self.run(run_id)
            if run.status != "awaiting_approval":
                details = f"the run is {run.status}, not waiting for a person's approval"
                raise RunNotActive(data={"runId": run.id, "status": run.status, "details": details})
            step_id, output = self._pending(run)
            decided = {"person": person, "via": via, **({"comment": comment} if comment else {})}
            try:
                if not approve:
                    written = self._write(
                        run, RunUpdate(status="active"), [NewEvent("declined", step_id, decided)], person
                    )
                    issues, suggestions = _declined_issue(decided)
                    return {
                        "runId": run.id,
                        "accepted": False,
                        "status": written.status,
                        "declined": _decision_data(decided),
                        "issues": issues,
                        "suggestions": suggestions,
                        **self._view(written),
                    }
                workflow = self.pins.workflow(run.source_hash, None, self.store)
                position = run.position
                result = next_step(
                    workflow, [*position["completedSteps"], step_id], run.context, state=position.get("state")
                )
                after = next_json(result)
                status = "completed" if result.is_complete else "active"
                events = [
                    NewEvent("approved", step_id, decided),
                    NewEvent("accepted", step_id, {"output": output}),
                ]
                if status == "completed":
                    events.append(NewEvent("completed"))
                written = self._write(
                    run, RunUpdate(status=status, position=after, accepted=run.accepted + 1), events, person
                )
            except Conflict:
                continue
            return {
                "runId": run.id,
                "accepted": True,
                "status": written.status,
                "approved": _decision_data(decided),
                **self._view(written),
            }
        raise StateError("the run is changing too fast to write; try again", {"runId": run_id})

    def _check_size(self, context: Mapping[str, Any]) -> None:
        """A run's context, grown by many merges, stays within the limit each call's has."""
        import orjson

        try:
            size = len(orjson.dumps(context))
        except (TypeError, orjson.JSONEncodeError):
            size = len(json.dumps(context, ensure_ascii=True))
        if size > self.max_context_bytes:
            raise InvalidParams(
                data={
                    "details": f"the run's context would be {size} bytes as JSON, over the limit of "
                    f"{self.max_context_bytes}; remove keys by setting them to null",
                    "limit": "maxContextBytes",
                    "value": self.max_context_bytes,
                }
            )

    def _write(self, run: RunRecord, change: RunUpdate, events: list[NewEvent], actor: str) -> RunRecord:
        try:
            return self._remember(self.store.update(run, change, events, actor))
        except Conflict:
            self._recent.pop(run.id, None)
            raise

    # -- workflow_resume -------------------------------------------------------------
    def open_runs(self, workspace: str, limit: int = OPEN_RUNS_LISTED) -> list[dict[str, Any]]:
        runs = self.store.list_runs(
            workspace=workspace, statuses=ACTIVE_STATUSES, owner=self.owner(), limit=limit
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

    def resume(self, snapshot: Snapshot, run_id: str | None, workspace: str | None) -> dict[str, Any]:
        if run_id is None:
            return {"runs": self.open_runs(self.workspace(workspace))}
        run = self.run(run_id)
        workflow = self.pinned(snapshot, run)
        recap = []
        for event in self.store.events(run.id):
            if event.type == "accepted" and event.step_id is not None:
                node = workflow.nodes.get(event.step_id)
                recap.append(
                    {
                        "stepId": event.step_id,
                        "title": node.title if node is not None else event.step_id,
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
    def abandon(self, run_id: str, reason: str) -> dict[str, Any]:
        for _ in range(MAX_RETRIES):
            run = self.run(run_id)
            if run.status not in ACTIVE_STATUSES:
                raise _not_active(run)
            try:
                written = self._write(
                    run,
                    RunUpdate(status="abandoned"),
                    [NewEvent("abandoned", data={"reason": reason})],
                    self.owner(),
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


class _off_the_clock:
    """Time inside does not count against the request's budget (checks, a person)."""

    def __enter__(self) -> None:
        self.start = time.monotonic()

    def __exit__(self, *exc: object) -> None:
        spent = budget.current()
        if spent is not None:
            spent.deadline += time.monotonic() - self.start


def _decision_data(data: Mapping[str, Any]) -> dict[str, Any]:
    return {k: data[k] for k in ("person", "comment") if k in data}


def _declined_issue(data: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    issue = f"{data.get('person', 'a person')} declined this step"
    comment = data.get("comment")
    if comment:
        issue += f": {comment}"
    return [issue], ["Change the output as the comment asks, then submit the step again."]


def _not_active(run: RunRecord) -> RunNotActive:
    details = f"the run is {run.status}; start a new run with workflow_start"
    return RunNotActive(data={"runId": run.id, "status": run.status, "details": details})


def _not_current(
    step_id: str, run: RunRecord, *, position: Mapping[str, Any] | None = None, moved: bool = False
) -> StepNotCurrent:
    position = run.position if position is None else position
    step = position.get("step")
    current = step.get("id") if isinstance(step, dict) else None
    if moved:
        details = f"another submission for `{step_id}` was accepted first; the run is now at " + (
            f"`{current}`" if current else ("its end" if position.get("isComplete") else "no step (blocked)")
        )
    elif current is None:
        details = (
            "the run is complete"
            if position.get("isComplete")
            else "the run has no current step: set the context it is waiting for (see missingContext)"
        )
    else:
        details = f"the run is at `{current}`, not `{step_id}`"
    return StepNotCurrent(
        data={"runId": run.id, "stepId": step_id, "currentStep": current, "details": details}
    )
