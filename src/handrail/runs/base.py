"""What every run operation stands on: the store (opened on first use), who asks
(each operation takes the request, handrail.request), the workspace, reading one run
and writing it with its events.

`Runs` (runs/core.py) is built in layers, each in a module named for what it adds:
this base, the decisions of a person (decisions.py), a step's output judged and the
run advanced (advance.py), and the run's lifecycle: start, resume, abandon (core.py).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from handrail import budget
from handrail.errors import InvalidParams, RunNotActive, RunNotFound, StepNotCurrent
from handrail.limits import MAX_CONTEXT_BYTES
from handrail.request import Request
from handrail.runs.pinning import Pins
from handrail.store.base import LOCAL_OWNER, Conflict, Event, NewEvent, RunRecord, RunUpdate

if TYPE_CHECKING:
    from handrail.catalog import Snapshot
    from handrail.checks import CheckConfig
    from handrail.model import Workflow
    from handrail.store import RunStore


log = logging.getLogger("handrail.runs")

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


def shown_title(position: Mapping[str, Any]) -> dict[str, str]:
    """`{"title": ...}`: the current step's title as the agent was shown it (a loop's
    templates filled for its iteration), kept on the step's events; {} without a step."""
    step = position.get("step")
    title = step.get("title") if isinstance(step, Mapping) else None
    return {"title": title} if isinstance(title, str) else {}


def event_title(event: Event, fallback: str) -> str:
    """The title a step's event was given for its iteration, else `fallback` (the step's
    own title: events written before titles were kept on them)."""
    title = event.data.get("title")
    return title if isinstance(title, str) else fallback


def summary(output: str) -> str:
    text = " ".join(output.split())
    return text if len(text) <= RECAP_CHARS else text[: RECAP_CHARS - 1].rstrip() + "…"


class RunsBase:
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
        self._recent: dict[str, RunRecord] = {}  # runs as this process last wrote them
        self.max_context_bytes = MAX_CONTEXT_BYTES  # the service sets its own limit
        self._opening = threading.Lock()
        self.check_config: CheckConfig | None = None  # the service sets the server's own
        # where a person approves in a browser, when this server serves the dashboard
        self.dashboard_url: str | None = None

    @property
    def store(self) -> RunStore:
        if self._store is None:
            with self._opening:  # HTTP serves from several threads: open one store, not two
                if self._store is None:
                    self._store = self._store_factory()
        return self._store

    def owner(self, request: Request) -> str:
        """Who is asking: the person the request names (a token's, a dashboard session's),
        else the server's one owner."""
        return request.owner or self.default_owner

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
    @staticmethod
    def default_workspace(request: Request) -> str:
        """The client's first MCP root that is a folder here, else the server's working folder."""
        return request.workspace or os.getcwd()

    def workspace(self, request: Request, value: str | None) -> str:
        if value is None:
            return self.default_workspace(request)
        if not os.path.isabs(value):
            raise InvalidParams(data={"details": f"workspace must be an absolute path, not {value[:200]!r}"})
        path = os.path.normpath(value)
        if not os.path.isdir(path):
            raise InvalidParams(data={"details": f"workspace {path[:200]!r} is not a folder"})
        return path

    def run(self, request: Request, run_id: str) -> RunRecord:
        found = self.store.get(run_id)
        if found is None or found.owner != self.owner(request):
            raise RunNotFound(data={"runId": run_id})
        return found

    def pinned(self, snapshot: Snapshot, run: RunRecord) -> Workflow:
        return self.pins.workflow(run.source_hash, snapshot.get(run.workflow_id), self.store)

    @staticmethod
    def _view(run: RunRecord) -> dict[str, Any]:
        """The engine's answer as stored, shaped as in workflow_next (bookkeeping left out)."""
        position = run.position
        step = position.get("step")
        guidance = position.get("guidance")
        if step is None and isinstance(guidance, dict):
            guidance = _run_guidance(guidance)
        view: dict[str, Any] = {
            "step": step,
            "guidance": guidance,
            "isComplete": bool(position.get("isComplete")),
        }
        if "loop" in position:
            view["loop"] = position["loop"]
        view["progress"] = {"completed": run.accepted}
        return view

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


def _run_guidance(guidance: dict[str, Any]) -> dict[str, Any]:
    """A blocked run's guidance, naming the call a run takes: the engine's names workflow_next."""
    from handrail.engine.next import AGAIN

    prompt = guidance.get("prompt")
    if not isinstance(prompt, str) or AGAIN not in prompt:
        return guidance
    told = "call workflow_continue with this runId and only `context` (no stepId, no output)"
    return {**guidance, "prompt": prompt.replace(AGAIN, told)}


class _off_the_clock:
    """Time inside does not count against the request's budget (checks, a person)."""

    def __enter__(self) -> None:
        self.start = time.monotonic()

    def __exit__(self, *exc: object) -> None:
        spent = budget.current()
        if spent is not None:
            spent.deadline += time.monotonic() - self.start


def _not_active(run: RunRecord) -> RunNotActive:
    if run.status == "completed":
        details = (
            "the run is completed: every step was accepted and its record is kept "
            "(workflow_resume shows it), so nothing is lost and nothing is left to do in it; "
            "for new work, start a new run with workflow_start"
        )
    else:
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
            else "the run has no current step: set the context it is waiting for (see missingContext) "
            "with workflow_continue, this runId and only `context`"
        )
    else:
        details = f"the run is at `{current}`, not `{step_id}`"
    return StepNotCurrent(
        data={"runId": run.id, "stepId": step_id, "currentStep": current, "details": details}
    )
