"""The tools' meaning: argument checking, calling the engine, shaping results.

Every way in (MCP tools/call, the seed's direct methods, the library) comes through
`Service._run` with the request (handrail.model.request) as an argument, so they cannot
drift apart. Errors are raised as HandrailError; a call whose client must first ask
its person (an approval, 2026-07-28) returns `InputRequired`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

from handrail.catalog import Catalog, Snapshot
from handrail.model import budget
from handrail.model.codec import Encoded as Encoded
from handrail.model.codec import dumps, encode_sized
from handrail.model.errors import InvalidParams, WorkflowNotFound
from handrail.model.limits import Limits
from handrail.model.request import LOCAL, Request
from handrail.service.definitions import RUNS_ONLY_TOOLS, TABLE, tool_names, tools, workflow_schema

if TYPE_CHECKING:
    from handrail.checks.config import CheckConfig
    from handrail.engine.results import NextResult, Verdict
    from handrail.model.approvals import InputRequired
    from handrail.model.workflow import Workflow
    from handrail.runs import Runs
    from handrail.runs.ledger import RunSettings
    from handrail.service.argument_check import Accept
    from handrail.service.argument_limits import Admit

    # how a tool's call is made: the admission of its arguments, quick and thorough; its
    # handler; for a handler that reads the request (a run tool's), the type of the
    # question it may return instead of a result, else None
    Plan = tuple[Accept | None, Admit, Callable[..., Any], type[InputRequired] | None]

Handler = Callable[[Request, Snapshot, dict[str, Any]], Any]


class LaterRuns(NamedTuple):
    """A server's run operations, made when first used rather than at start-up (their
    modules are most of a server's): `make(**served)` makes them, with the service's own
    settings for them (`RunSettings` fields: its limits, checks, dashboard, catalog), and
    `database_file` is the SQLite file they will open (None: another store), which
    `initialize` looks for without making them."""

    make: Callable[..., Runs]
    database_file: str | None


class Service:
    def __init__(
        self,
        catalog: Catalog,
        limits: Limits | None = None,
        *,
        runs: Runs | LaterRuns | None = None,
        runs_only: bool = False,
        checks: CheckConfig | None = None,
        dashboard_url: str | None = None,
    ) -> None:
        """`runs`: what makes the run store's operations on first use (default: over the store
        `HANDRAIL_DATABASE_URL` or ~/.handrail names), given this service's limits, checks,
        dashboard and catalog as they are made; or runs made already, with their own.
        `runs_only`: see spec/runs.md. `checks`:
        what runs' checks may do (commands allowed, named commands); None: nothing allowed.
        `dashboard_url`: the dashboard's address, when this server serves it (named in
        what a run waiting for approval says)."""
        self.catalog = catalog
        self.limits = limits or Limits()
        self.check_config = checks
        self.dashboard_url = dashboard_url
        self._later = later_runs() if runs is None else runs if isinstance(runs, LaterRuns) else None
        self._runs: Runs | None = None if runs is None or isinstance(runs, LaterRuns) else runs
        self._making = threading.Lock()  # HTTP answers from several threads: the runs are made once
        self.runs_only = runs_only
        self._plans: dict[str, Plan] = {}  # name -> how its calls are made
        self._listing: tuple[Snapshot, Encoded] | None = None
        # the catalog's tools answer alike whoever asks; the run tools take the request
        # (each tool's handler is named in its declaration: service/definitions.py)
        self._handlers: dict[str, Callable[[Snapshot, dict[str, Any]], Any]] = {
            t.name: getattr(self, t.handler) for t in TABLE if not t.runs
        }
        self._made_run_handlers: dict[str, Handler] | None = None

    @property
    def runs(self) -> Runs:
        """The run operations, made on first use when the service was given `LaterRuns`."""
        made = self._runs
        if made is None:
            with self._making:
                if self._runs is None:
                    assert self._later is not None
                    self._runs = self._later.make(
                        max_context_bytes=self.limits.max_context_bytes,
                        check_config=self.check_config,
                        dashboard_url=self.dashboard_url,
                        catalog=self.catalog.snapshot,
                    )
                made = self._runs
        return made

    @property
    def _run_handlers(self) -> dict[str, Handler]:
        """The run tools' handlers, made with the first tool call (and the runs with them)."""
        if self._made_run_handlers is None:
            from handrail.runs.handlers import run_handlers  # lazy: after `initialize` is answered

            found = run_handlers(self.runs, self.workflow)
            self._made_run_handlers = {t.name: found[t.handler] for t in TABLE if t.runs}
        return self._made_run_handlers

    @staticmethod
    def knows(name: str) -> bool:
        return name in _TOOL_NAMES

    def call(self, name: str, arguments: Any, request: Request = LOCAL) -> Any:
        """The tool's result as JSON values (what `answer` encodes for the wire), asked by
        `request` (by default the server's own person, asking through no client)."""
        result = self._run(request, name, arguments, False)
        if type(result) is Encoded:
            return result.value()
        if type(result) is dict:  # parts encoded once for the wire (engine/result_json.next_json)
            return {key: v.value() if type(v) is Encoded else v for key, v in result.items()}
        return result

    def answer(self, name: str, request: Request, arguments: Any) -> Encoded | InputRequired:
        """The tool's result as the wire carries it: encoded once, and that encoding is
        where `maxReplyBytes` is checked, so no reply is measured and encoded again.
        (`name` first: the protocol's handler for a tool's direct method binds it.)"""
        encoded: Encoded | InputRequired = self._run(request, name, arguments, True)
        return encoded

    def _run(self, request: Request, name: str, arguments: Any, encoded: bool) -> Any:
        if arguments is None:
            arguments = {}
        if type(arguments) is not dict and not isinstance(arguments, dict):
            raise InvalidParams(data={"details": "params must be an object"})
        if self.runs_only:
            from handrail.runs.handlers import refuse_in_runs_only  # lazy: after `initialize` is answered

            refuse_in_runs_only(name)
        plan = self._plans.get(name)
        if plan is None:
            plan = self._plans[name] = self._plan(name)
        quick, thorough, handler, question = plan
        limits = self.limits
        snapshot = self.catalog.snapshot()  # a reload of changed files is not the request's cost
        # the request's budget, opened here from this service's limits (see model/budget.py)
        token = budget.begin(limits.max_request_seconds, limits.max_reply_bytes, limits.regex_timeout_ms)
        try:
            if quick is None or not quick(arguments):
                thorough(arguments)
            # a handler called directly: a wrapper per call would cost what this branch saves
            result = handler(request, snapshot, arguments) if question else handler(snapshot, arguments)
            if type(result) is question:  # None for a catalog tool: never the type of a result
                return result  # not a reply of this tool: the protocol words the question
            reply = _bounded(result, limits.max_reply_bytes)
        finally:
            budget.end(token)
        return reply if encoded else result

    def _plan(self, name: str) -> Plan:
        """How a tool's call is made, worked out at its first call."""
        from handrail.model.approvals import InputRequired  # lazy: with a tool's first call
        from handrail.service.argument_limits import admit_arguments  # as InputRequired

        asks = name in self._run_handlers
        handler = self._run_handlers[name] if asks else self._handlers[name]
        quick, thorough = admit_arguments(self.limits, name, _input_schema(name))
        return quick, thorough, handler, InputRequired if asks else None

    def published_tools(self) -> tuple[dict[str, Any], ...]:
        """What tools/list offers: every tool, or with `runs_only` the listing and the run tools."""
        if not self.runs_only:
            return tools()
        return tuple(t for t in tools() if t["name"] in RUNS_ONLY_TOOLS)

    def open_runs_note(self, request: Request, *, roots: bool = False) -> str:
        """What `initialize` says about the asking person's unfinished runs in the server's
        workspace. `roots`: the client offers MCP roots (its workspace is known only later)."""
        file = self._later.database_file if self._runs is None and self._later is not None else None
        if file is not None and not os.path.exists(file):
            return ""  # no database yet: no run to tell of, and the runs stay unmade
        from handrail.runs.handlers import open_runs_note  # lazy: after `initialize` is answered

        return open_runs_note(self.runs, request, roots=roots)

    def interrupt(self) -> None:
        """The server is stopping: kill the processes of the checks running now (each
        check then ends as killed)."""
        from handrail.checks.processes import kill_running  # here: only a stopping server needs it

        kill_running()

    def close(self) -> None:
        if self._runs is not None:  # runs never made have no store to close
            self._runs.close()

    def workflow(self, snapshot: Snapshot, workflow_id: str) -> Workflow:
        found = snapshot.get(workflow_id)
        if found is None:
            data: dict[str, Any] = {"workflowId": workflow_id}
            broken = snapshot.why_broken(workflow_id)
            if broken is not None:  # not "did you mean" the very id asked for
                data["file"] = broken.file
                data["details"] = f"`{workflow_id[:100]}` is in a broken file: {broken.render()}"
                raise WorkflowNotFound(data=data)
            from handrail.catalog.suggest import close_matches  # lazy: only for an unknown id

            close = close_matches(workflow_id, snapshot.entries)
            if close:
                data["didYouMean"] = close
            raise WorkflowNotFound(data=data)
        return found

    def workflow_list(self, snapshot: Snapshot, args: dict[str, Any]) -> Encoded:
        cached = self._listing
        if cached is not None and cached[0] is snapshot:
            return cached[1]  # one listing per snapshot: snapshots never change
        listing = Encoded(dumps(self._listing_of(snapshot)))
        self._listing = (snapshot, listing)
        return listing

    @staticmethod
    def _listing_of(snapshot: Snapshot) -> dict[str, Any]:
        return {
            "workflows": [
                {
                    "id": e.item.id,
                    "name": e.item.name,
                    "description": e.item.description,
                    "category": e.item.category,
                    "version": e.item.version,
                    **({"source": dict(e.origin)} if e.origin is not None else {}),  # git: url, commit
                }
                for e in snapshot.entries.values()
            ],
            "diagnostics": [d.as_dict() for d in snapshot.problems],
        }

    def workflow_get(self, snapshot: Snapshot, args: dict[str, Any]) -> Encoded:
        workflow = self.workflow(snapshot, args["id"])
        document: Encoded = workflow.derived.document  # made by the compiler (engine/derived.py)
        return document

    def workflow_next(self, snapshot: Snapshot, args: dict[str, Any]) -> dict[str, Any]:
        engine = _engine()
        workflow = self.workflow(snapshot, args["workflowId"])
        result = engine.next_step(
            workflow,
            args["completedSteps"],
            args.get("context"),
            current_step=args.get("currentStep"),
            state=args.get("state"),
        )
        return engine.next_json(result, spliced=True)  # the typed result to the wire, here and nowhere else

    def workflow_validate(self, snapshot: Snapshot, args: dict[str, Any]) -> dict[str, Any] | Encoded:
        engine = _engine()
        workflow = self.workflow(snapshot, args["workflowId"])
        verdict = engine.validate_output(workflow, args["stepId"], args["output"], args.get("context"))
        return engine.verdict_reply(verdict)

    def workflow_validate_json(self, snapshot: Snapshot, args: dict[str, Any]) -> dict[str, Any]:
        from handrail.compiler import compile_text  # lazy: after `initialize` is answered
        from handrail.patterns.caching import transient  # lazy: after `initialize` is answered

        with transient():  # what a client sends is compiled, never kept (patterns/caching.py)
            compiled = compile_text(args["workflow"], "<workflow>")
            diagnostics = [d.as_dict() for d in compiled.diagnostics]  # located here, in budget
        return {
            "valid": compiled.workflow is not None,
            "diagnostics": diagnostics,
        }

    def workflow_get_schema(self, snapshot: Snapshot, args: dict[str, Any]) -> dict[str, Any]:
        return dict(workflow_schema())


class _Engine(NamedTuple):
    next_step: Callable[..., NextResult]
    validate_output: Callable[..., Verdict]
    next_json: Callable[..., dict[str, Any]]
    verdict_reply: Callable[[Verdict], dict[str, Any] | Encoded]


@cache
def _engine() -> _Engine:
    """The engine and its conversion to the wire, imported on first use: after `initialize`
    (see handrail/__init__), and once, since an import statement per call (1.6 µs) costs
    about as much as the conversion itself."""
    from handrail.engine import next_step, validate_output  # lazy: after `initialize` is answered
    from handrail.engine.result_json import next_json, verdict_reply  # lazy: after `initialize` is answered

    return _Engine(next_step, validate_output, next_json, verdict_reply)


_TOOL_NAMES = frozenset(tool_names())


def _input_schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = next(t["inputSchema"] for t in tools() if t["name"] == name)
    return schema


def default_runs(
    database: str | None = None, *, reading: bool = False, settings: RunSettings | None = None
) -> Runs:
    """Runs over the store `database` names (default: see handrail.store.default_url);
    `reading`: the caller only reads (see handrail.store.open_store); `settings`: the
    server's for them (its SQLite file is filled in)."""
    from handrail.runs import Runs  # lazy: loaded on first use, after `initialize` is answered
    from handrail.runs.ledger import RunSettings  # as Runs
    from handrail.store import default_url, open_store  # lazy: after `initialize` is answered

    url = database or default_url()
    given = settings or RunSettings()
    return Runs(lambda: open_store(url, reading=reading), given._replace(database_file=database_file(url)))


def later_runs(database: str | None = None, settings: Callable[[], RunSettings] | None = None) -> LaterRuns:
    """`default_runs(database)` made on first use, with the settings `settings()` makes
    (a server's: its roles, channels, hooks) and the service's own added to them."""
    from handrail.store import default_url  # lazy: after `initialize` is answered

    url = database or default_url()

    def make(**served: Any) -> Runs:
        from handrail.runs.ledger import RunSettings  # lazy: with the runs, on first use

        given = settings() if settings is not None else RunSettings()
        return default_runs(url, settings=given._replace(**served))

    return LaterRuns(make, database_file(url))


def database_file(url: str) -> str | None:
    """The SQLite file a database URL names; None for another store, or a URL whose
    mistake is reported when the store is opened."""
    if not url.startswith("sqlite:"):
        return None
    from handrail.store.urls import sqlite_path  # lazy: loaded on first use, after `initialize` is answered

    try:
        return str(sqlite_path(url))
    except Exception:  # reported when the store is opened
        return None


def _bounded(result: Any, limit: int) -> Encoded:
    """`result` encoded, once; refused when larger than `maxReplyBytes` as JSON
    (templates stop earlier)."""
    if isinstance(result, Encoded):
        encoded, size = result, len(result.data)
    else:
        data, size = encode_sized(result)
        encoded = Encoded(data)
    if size > limit:
        raise budget.over_size(size, "the reply")
    return encoded
