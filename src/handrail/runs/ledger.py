"""What every run operation stands on: the store (opened on first use), who asks, the
workspace, reading one run and writing it with its events through the transition
table (runs/machine.py), and the compare-and-set retry every write goes through."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from handrail.internals import Lock  # threading's, without loading threading
from handrail.model.codec import json_size
from handrail.model.errors import InvalidParams, RunNotFound, StateError, StorageError
from handrail.model.limits import MAX_CONTEXT_BYTES
from handrail.model.runs import Event, EventType, NewEvent, RunRecord, RunStatus, RunUpdate
from handrail.model.slotted import Frozen
from handrail.observe.observer import NULL_OBSERVER, NULL_TRACER
from handrail.runs import gate_digest, machine
from handrail.runs.pinning import Pins
from handrail.store.base import LOCAL_OWNER, Conflict, NewNotification, written
from handrail.store.rows import now

if TYPE_CHECKING:
    from handrail.catalog import Snapshot
    from handrail.checks import CheckConfig
    from handrail.model.request import Request
    from handrail.model.workflow import Workflow
    from handrail.notify.targets import NotifyConfig
    from handrail.observe.observer import Observer, Tracer
    from handrail.runs.approvers import Roles
    from handrail.runs.position import Position
    from handrail.store import RunStore

MAX_RETRIES = 8  # compare-and-set retries when another writer touched the run meanwhile
LEASE_SECONDS = 300.0  # a branch's lease, renewed by each call of its holder on it
RECENT_RUNS = 256  # runs whose last write this process keeps, to skip a read on the next one
SOURCES_KEPT = 32  # pinned sources kept parsed, for the gate digests of the steps they move to

T = TypeVar("T")


def new_run_id() -> str:
    import secrets  # lazy: a gate hook writes through the ledger and starts no run

    return "run_" + secrets.token_hex(16)  # 128 random bits


def new_run(
    run_id: str,
    owner: str,
    workspace: str,
    pinned: tuple[str, str, str],
    goal: str,
    context: Mapping[str, Any],
    position: Position,
    more: Mapping[str, Any],
    below: tuple[str, str, int | None] | None = None,
) -> tuple[RunRecord, list[NewEvent]]:
    """A run's row as it is made, now, on the workflow `pinned` (id, version, source hash),
    active until its events say otherwise (`Ledger.create`); `below`: its parent, the
    parent's step and the branch, for a run made in a tree. With its first events: the
    `started` event (`more` after what every run keeps), and `completed` when its
    position is already past its last step."""
    workflow_id, version, source_hash = pinned
    parent_id, parent_step, branch = below or (None, None, None)
    at = now()
    run = RunRecord(
        id=run_id,
        owner=owner,
        workspace=workspace,
        workflow_id=workflow_id,
        workflow_version=version,
        source_hash=source_hash,
        goal=goal,
        status=RunStatus.ACTIVE,
        context=context,
        position=position.to_stored(),
        accepted=0,
        created_at=at,
        updated_at=at,
        version=1,
        parent_id=parent_id,
        parent_step=parent_step,
        branch=branch,
    )
    started: dict[str, Any] = {
        "workflowId": workflow_id,
        "workflowVersion": version,
        "sourceHash": source_hash,
        "goal": goal,
        "workspace": workspace,
        "context": context,
    }
    if below is not None:
        started.update(parentId=parent_id, parentStep=parent_step)
        if branch is not None:
            started["branch"] = branch
    events = [NewEvent(EventType.STARTED, data={**started, **more})]
    if position.is_complete:
        events.append(NewEvent(EventType.COMPLETED))
    return run, events


def recordable(path: str) -> bool:
    """Whether a run can record the path: a name that is not UTF-8 comes as lone surrogates."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _nobody_s(person: str) -> frozenset[str]:
    return frozenset()  # no tokens file: no one holds a role


def _nothing() -> None:
    pass


class RunSettings(Frozen):
    """A server's settings for its runs, made once by whoever builds the runs (the command
    line, the service) and given to the ledger at construction; nothing changes them
    after. A Frozen class of slots, neither a dataclass (the inspect module) nor a NamedTuple:
    the gate's hook loads this module on a write, and typing would compile the
    annotations of the fields that name layers a hook never loads (its first compile()
    alone costs the hook about 2 ms)."""

    __slots__ = (
        "approval_channels",
        "catalog",
        "check_config",
        "dashboard_url",
        "database_file",
        "lease_seconds",
        "max_context_bytes",
        "notify",
        "observer",
        "on_close",
        "owner",
        "queued",
        "require_presence",
        "roles",
        "tracer",
    )

    owner: str
    database_file: str | None
    max_context_bytes: int
    check_config: CheckConfig | None
    dashboard_url: str | None
    catalog: Callable[[], Snapshot] | None
    notify: NotifyConfig | None
    approval_channels: frozenset[str] | None
    require_presence: bool
    roles: Roles
    lease_seconds: float
    observer: Observer
    tracer: Tracer
    queued: Callable[[], None]
    on_close: Callable[[], None]

    def __init__(
        self,
        *,
        owner: str = LOCAL_OWNER,  # whose runs are the ones no request names a person for
        # the SQLite file, when there is one; a server looks for it before listing open runs
        # at start-up, so that it never creates a database nobody uses
        database_file: str | None = None,
        max_context_bytes: int = MAX_CONTEXT_BYTES,  # the service's limit (maxContextBytes)
        check_config: CheckConfig | None = None,  # what checks may run; None: nothing allowed
        # where a person approves in a browser, when this server serves the dashboard
        dashboard_url: str | None = None,
        catalog: Callable[[], Snapshot] | None = None,  # where a sub-workflow's child finds its workflow
        notify: NotifyConfig | None = None,  # where the server sends notifications (None: nowhere)
        # the channels this server takes approvals from (--approval-channels); None: all
        approval_channels: frozenset[str] | None = None,
        require_presence: bool = False,  # every approval needs the person's passkey
        roles: Roles = _nobody_s,  # each person's roles, from the tokens file (spec/runs.md)
        lease_seconds: float = LEASE_SECONDS,  # how long a claim holds a branch (--lease-seconds)
        observer: Observer = NULL_OBSERVER,  # `handrail serve --metrics` counts writes
        tracer: Tracer = NULL_TRACER,  # traces (handrail/observe/tracing.py): a span per write
        queued: Callable[[], None] = _nothing,  # told when a write queued notifications
        on_close: Callable[[], None] = _nothing,  # stops what uses the store, before it closes
    ) -> None:
        self._fill(locals())  # the parameters, one a slot each


DEFAULTS = RunSettings()


class Ledger:
    """The runs of one server as the store keeps them, and the server's settings for
    them. `store_factory` opens the store on first use, so a server that nobody asks
    about runs never touches the database."""

    def __init__(self, store_factory: Callable[[], RunStore], settings: RunSettings | None = None) -> None:
        """`settings`: the server's for its runs (None: `RunSettings()`'s defaults)."""
        self._store_factory = store_factory
        self.settings = settings or DEFAULTS
        self._store: RunStore | None = None
        self.pins = Pins()
        self.recent: dict[str, RunRecord] = {}  # runs as this process last wrote them
        self._opening = Lock()
        self._sources: dict[str, Mapping[str, Any]] = {}  # source hash -> its document, parsed

    @property
    def store(self) -> RunStore:
        if self._store is None:
            with self._opening:  # HTTP serves from several threads: open one store, not two
                if self._store is None:
                    self._store = self._store_factory()
        return self._store

    @property
    def exists(self) -> bool:
        """Whether the store is open or there to open: a sweep never creates a database."""
        file = self.settings.database_file
        return self._store is not None or file is None or os.path.exists(file)

    def owner(self, request: Request) -> str:
        """Who is asking: the person the request names (a token's, a dashboard session's),
        else the server's one owner."""
        return request.owner or self.settings.owner

    def remember(self, run: RunRecord) -> RunRecord:
        with self._opening:
            recent = self.recent
            recent.pop(run.id, None)
            recent[run.id] = run
            if len(recent) > RECENT_RUNS:
                recent.pop(next(iter(recent)), None)
        return run

    def close(self) -> None:
        self.settings.on_close()
        if self._store is not None:
            self._store.close()
            self._store = None

    # -- the workspace ---------------------------------------------------------------
    @staticmethod
    def default_workspace(request: Request) -> str:
        """The client's first MCP root that is a folder here, else the server's working folder."""
        folder = request.workspace or os.getcwd()
        if not recordable(folder):
            shown = os.fsencode(folder).decode("utf-8", "backslashreplace")
            raise InvalidParams(
                data={
                    "details": f"the server's working folder `{shown}` has a name that is not UTF-8, "
                    "which a run cannot record: give `workspace`, a folder whose name is"
                }
            )
        return folder

    def workspace(self, request: Request, value: str | None) -> str:
        if value is None:
            return self.default_workspace(request)
        if not os.path.isabs(value):
            raise InvalidParams(data={"details": f"workspace must be an absolute path, not {value[:200]!r}"})
        path = os.path.normpath(value)
        if not os.path.isdir(path):
            raise InvalidParams(data={"details": f"workspace {path[:200]!r} is not a folder"})
        return path

    # -- reading ---------------------------------------------------------------------
    def run(self, request: Request, run_id: str) -> RunRecord:
        found = self.store.get(run_id)
        if found is None or found.owner != self.owner(request):
            raise RunNotFound(data={"runId": run_id})
        if found.tampered:  # edited past the store: nothing is served from it (spec/runs.md)
            raise StorageError(
                f"run {run_id} was changed outside handrail: " + "; ".join(found.tampered),
                {"runId": run_id, "tampered": list(found.tampered)},
            )
        return found

    def events(self, run_id: str) -> list[Event]:
        return self.store.events(run_id)

    def pinned(self, snapshot: Snapshot | None, run: RunRecord) -> Workflow:
        current = snapshot.get(run.workflow_id) if snapshot is not None else None
        return self.pins.workflow(run.source_hash, current, self.store)

    def check_size(self, context: Mapping[str, Any]) -> None:
        """A run's context, grown by many merges, stays within the limit each call's has."""
        size, limit = json_size(context), self.settings.max_context_bytes
        if size > limit:
            raise InvalidParams(
                data={
                    "details": f"the run's context would be {size} bytes as JSON, over the limit of "
                    f"{limit}; remove keys by setting them to null",
                    "limit": "maxContextBytes",
                    "value": limit,
                }
            )

    # -- writing ---------------------------------------------------------------------
    def create(self, run: RunRecord, events: Sequence[NewEvent]) -> RunRecord:
        """A new run with its first events; its status is the one they leave it in."""
        status = machine.after(None, [e.type for e in events])
        if status is None:
            raise StateError("a run cannot start with these events", {"runId": run.id})
        run = run._replace(
            status=status, gate=self.digest(run.source_hash, run.position, self._folders(run, events))
        )
        notes = self._notices(run, events, run.owner, lambda: ())
        with self.settings.tracer.span(**self._write_span("create", run, events)):
            created = self.remember(self.store.create(run, events, notes))
        if notes:
            self.settings.queued()
        return created

    def write(self, run: RunRecord, change: RunUpdate, events: Sequence[NewEvent], actor: str) -> RunRecord:
        """`change` and `events` written only if the run is still as read (else `Conflict`);
        the status is the one the transition table gives for the events."""
        status = machine.after(run.status, [e.type for e in events])
        if status is None:
            raise StateError(
                f"the run is {run.status}: {', '.join(e.type for e in events)} cannot happen in it",
                {"runId": run.id, "status": run.status},
            )
        if status != run.status:
            change = change._replace(status=status)
        if change.position is not None or change.source_hash is not None:  # the step may have moved
            position = run.position if change.position is None else change.position
            digest = gate_digest.carried(
                run.gate,
                self.digest(
                    change.source_hash or run.source_hash, position, gate_digest.folders_of(run.gate)
                ),
            )
            if digest != run.gate:
                change = change._replace(gate=digest)
        settings = self.settings
        try:
            notes = (
                []
                if settings.notify is None  # the usual server: nothing more on a write's path
                else self._notices(
                    written(run, change, now(), len(events)), events, actor, lambda: self.events(run.id)
                )
            )
            with settings.tracer.span(**self._write_span("update", run, events)):
                result = self.remember(self.store.update(run, change, events, actor, notes))
        except Conflict:
            self.recent.pop(run.id, None)
            settings.observer.store_retry()
            raise
        except Exception:
            settings.observer.store_error()
            raise
        if notes:
            settings.queued()
        return result

    # -- the gate digest (runs/gate_digest.py) ---------------------------------------
    def digest(self, source_hash: str, position: Mapping[str, Any], folders: Sequence[str]) -> str:
        """The gate digest of the step `position` names, in the run's pinned source."""
        return gate_digest.compiled(self._document(source_hash), position, folders)

    def _document(self, source_hash: str) -> Mapping[str, Any]:
        with self._opening:
            found = self._sources.get(source_hash)
        if found is not None:
            return found
        text = self.store.get_source(source_hash)
        try:
            loaded = json.loads(text) if text is not None else {}
        except (ValueError, RecursionError):  # compiled when pinned: cannot happen but by an edit
            loaded = {}
        document: Mapping[str, Any] = loaded if isinstance(loaded, dict) else {}
        with self._opening:
            self._sources[source_hash] = document
            while len(self._sources) > SOURCES_KEPT:
                self._sources.pop(next(iter(self._sources)), None)
        return document

    def _folders(self, run: RunRecord, events: Sequence[NewEvent]) -> Sequence[str]:
        """The workflow folders of a new run: its `started` event's, else (a branch or
        child, started by the server) its parent's digest's."""
        given = events[0].data.get("workflowFolders") if events else None
        if isinstance(given, list):
            return given
        if run.parent_id is not None:
            parent = self.recent.get(run.parent_id) or self.store.get(run.parent_id)
            if parent is not None:
                return gate_digest.folders_of(parent.gate)
        return ()

    def _notices(
        self, run: RunRecord, events: Sequence[NewEvent], actor: str, history: Callable[[], Sequence[Event]]
    ) -> list[NewNotification]:
        """The notifications the write causes (written with it, in its transaction)."""
        notify = self.settings.notify
        if notify is None:
            return []
        from handrail.notify.events import notices  # lazy: a gate hook notifies no one

        return notices(notify, run, events, actor, history, dashboard_url=self.settings.dashboard_url)

    def _write_span(self, operation: str, run: RunRecord, events: Sequence[NewEvent]) -> dict[str, Any]:
        """The name and attributes of a store write's span (database conventions)."""
        return {
            "name": f"{operation} runs",
            "db.system.name": self.store.dialect,
            "db.operation.name": operation,
            "db.collection.name": "runs",
            "handrail.run.id": run.id,
            "handrail.events": ",".join(e.type for e in events),
        }

    @staticmethod
    def retrying(run_id: str, attempt: Callable[[], T]) -> T:
        """`attempt()` again while its write meets a run another writer moved meanwhile
        (it raises `Conflict`): each try reads the run afresh."""
        for _ in range(MAX_RETRIES):
            try:
                return attempt()
            except Conflict:
                continue
        raise StateError("the run is changing too fast to write; try again", {"runId": run_id})


class off_the_clock:
    """Time inside does not count against the request's budget (checks, a person)."""

    def __enter__(self) -> None:
        self.start = time.monotonic()

    def __exit__(self, *exc: object) -> None:
        from handrail.model import budget  # lazy: a gate hook's write runs no budget

        spent = budget.current()
        if spent is not None:
            spent.pause(time.monotonic() - self.start)
