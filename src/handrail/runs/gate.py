"""The gate's values (spec/gate.md): what a decision is given (the harness-neutral
event, the active run's facts, the options, what is protected) and what it returns, and
the facts read from a run's `gate` events. The decision is runs/gate_decision.py; the
harness adapters (handrail/gate/) turn a harness's hook input into a `GateEvent` and a
`Decision` into its answer; the command (cli/gate.py) reads and writes the store.
"""

import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from handrail.model.slotted import Slotted
from handrail.model.step_policy import OWN_SERVER, OWN_TOOLS, Policy

# made at run time, not only for type checkers: the classes below name them
EventKind = Literal["session", "prompt", "before-tool", "after-tool", "stop", "config", "compact"]
Verdict = Literal["allow", "deny", "block", "context"]

DEFAULT_STOP_LIMIT = 3
ACTIVE = ("active", "awaiting_approval")


# classes of slots, neither dataclasses nor NamedTuples: a hook makes these classes on
# every tool call (model/slotted.py)
class Action(Slotted):
    """What the agent is about to do (or did), in the gate's words."""

    __slots__ = ("kind", "leads_to", "target", "tool")

    def __init__(
        self,
        kind: str,  # edit | read | shell | mcp | web | tool
        target: str,  # edit/read: a path (absolute or relative to the working folder); shell:
        # the command line; mcp: server/tool; web: the address or query; tool: its name
        tool: str,  # the harness's own name for it
        # edit/read: where the path leads when a link makes it another (os.path.realpath),
        # set by the gate's store side before deciding; the decision judges both
        leads_to: str | None = None,
    ) -> None:
        self.kind = kind
        self.target = target
        self.tool = tool
        self.leads_to = leads_to

    def words(self, workspace: str, cwd: str) -> str:
        target = self.match_target(workspace, cwd)
        return f"{self.kind}:{target}" if target else self.kind

    def match_target(self, workspace: str, cwd: str) -> str:
        """The target as rules read it: a path relative to the workspace (`/`-separated)
        when it is inside, else absolute."""
        if self.kind not in ("edit", "read"):
            return "" if self.kind == "web" else self.target
        return relative(absolute(self.target, cwd), workspace)


class GateEvent(Slotted):
    __slots__ = (
        "action",
        "agent",
        "cwd",
        "internal",
        "kind",
        "missing",
        "outcome",
        "run_id",
        "session",
        "source",
    )

    def __init__(
        self,
        kind: EventKind,
        cwd: str,
        session: str | None = None,
        source: str | None = None,  # session: startup, resume, clear, compact; compact: manual, auto
        action: Action | None = None,
        outcome: str | None = None,  # after-tool: "ok" or "failed: ..."
        internal: bool = False,  # a stop of the harness's own helper agent: never refused
        agent: str | None = None,  # stop: the helper agent that stops (its refusals count apart)
        run_id: str | None = None,  # before-tool: the run a call of handrail's own run tools names
        # config (a harness's settings changed): the gate's hooks the settings no longer hold
        missing: tuple[str, ...] = (),
    ) -> None:
        self.kind = kind
        self.cwd = cwd
        self.session = session
        self.source = source
        self.action = action
        self.outcome = outcome
        self.internal = internal
        self.agent = agent
        self.run_id = run_id
        self.missing = missing


class Protected:
    """The paths an agent may not touch while a run is active.
    Slotted, not a NamedTuple: every hook process makes this class, at a tenth of the cost."""

    __slots__ = ("home", "paths")

    def __init__(self, paths: tuple[str, ...], home: str) -> None:
        self.paths = paths  # absolute: the run store's folder and file, workflow sources
        self.home = home  # the person's home folder, where harness settings also live


class RunFacts(Slotted):
    """What a decision needs of the active run, read from the store."""

    __slots__ = (
        "accepted",
        "accepted_count",
        "bound",
        "compacted",
        "goal",
        "helper_stop_refusals",
        "policy",
        "run_id",
        "status",
        "step_count",
        "step_id",
        "step_number",
        "step_prompt",
        "step_title",
        "stop_refusals",
        "waiting",
        "workflow_folders",
        "workflow_id",
        "workspace",
    )

    def __init__(
        self,
        run_id: str,
        workflow_id: str,
        goal: str,
        status: str,
        workspace: str,
        step_id: str | None,
        step_title: str | None,
        step_prompt: str | None,
        step_number: int,  # 1-based place of the current step among the workflow's steps
        step_count: int,
        accepted: tuple[str, ...],  # ids of the steps accepted so far, in order
        policy: Policy | None,
        stop_refusals: int,  # stops refused in a row at this step (by the bound session)
        workflow_folders: tuple[str, ...] = (),  # the sources of the server that started the run
        bound: str | None = None,  # the harness session the run is bound to, once one was seen
        compacted: bool = False,  # the bound session's context was compacted since its last prompt
        # the run waits on its branches (`branches`) or child (`child`) at this step, and no
        # open run of its tree in its workspace was found for the session: "kind:stepId"
        waiting: str | None = None,
        helper_stop_refusals: int = 0,  # the same, of the session's helper agents' stops
        accepted_count: int = 0,  # steps accepted so far (`accepted` holds the recent events' only)
    ) -> None:
        self.run_id = run_id
        self.workflow_id = workflow_id
        self.goal = goal
        self.status = status
        self.workspace = workspace
        self.step_id = step_id
        self.step_title = step_title
        self.step_prompt = step_prompt
        self.step_number = step_number
        self.step_count = step_count
        self.accepted = accepted
        self.policy = policy
        self.stop_refusals = stop_refusals
        self.workflow_folders = workflow_folders
        self.bound = bound
        self.compacted = compacted
        self.waiting = waiting
        self.helper_stop_refusals = helper_stop_refusals
        self.accepted_count = accepted_count


class Options(Slotted):
    __slots__ = ("driven_from", "driven_run", "reminder", "require_run", "stop_limit")

    def __init__(
        self,
        require_run: str | None = None,
        reminder: bool = True,
        stop_limit: int = DEFAULT_STOP_LIMIT,
        # a session `handrail drive` started for the step after this many accepted ones of run
        # `driven_run` (a branch it claims holds it as any session): done once that is accepted
        driven_from: int | None = None,
        driven_run: str | None = None,
    ) -> None:
        self.require_run = require_run
        self.reminder = reminder
        self.stop_limit = stop_limit
        self.driven_from = driven_from
        self.driven_run = driven_run


class Decision(Slotted):
    __slots__ = ("record", "text", "verdict")

    def __init__(
        self,
        verdict: Verdict,
        text: str = "",  # the reason of a deny or block, or the context added
        record: Mapping[str, Any] | None = None,  # the gate event to write, if any
    ) -> None:
        self.verdict = verdict
        self.text = text
        self.record = record


def absolute(path: str, cwd: str) -> str:
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path))


def relative(path: str, folder: str) -> str:
    if path == folder:
        return "."
    prefix = folder.rstrip(os.sep) + os.sep
    return path[len(prefix) :].replace(os.sep, "/") if path.startswith(prefix) else path


def inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def other_session(run: RunFacts, event: GateEvent) -> bool:
    """The event comes from a harness session other than the one the run is bound to."""
    return event.session is not None and run.bound is not None and run.bound != event.session


def own_tool(target: str) -> bool:
    server, _, tool = target.partition("/")
    return server == OWN_SERVER and tool in OWN_TOOLS


def bound_session(events: Sequence[tuple[str, Mapping[str, Any]]]) -> str | None:
    """The session of the latest `gate` event that bound the run (None: not bound yet)."""
    for type_, data in reversed(events):
        if type_ == "gate" and data.get("bind") is True and isinstance(data.get("session"), str):
            return str(data["session"])
    return None


def stop_refusals(
    events: Sequence[tuple[str, str | None, Mapping[str, Any]]],
    step_id: str | None,
    session: str | None = None,
    helpers: bool = False,
) -> int:
    """Stops refused in a row at `step_id`, reading the run's events from the newest:
    a prompt, or any event other than the gate's (the step accepted, declined...),
    ends the row; the gate's other records (tools run between stops) do not. With
    `session` (the bound one), the gate's records of other sessions are passed over.
    The agent's own stops and its helpers' (`helpers`) are counted apart, so that a
    helper refused to the limit does not let the agent's own next stop through."""
    return stop_counts(events, step_id, session)[1 if helpers else 0]


def stop_counts(
    events: Sequence[tuple[str, str | None, Mapping[str, Any]]],
    step_id: str | None,
    session: str | None = None,
) -> tuple[int, int]:
    """`stop_refusals` of the agent's own stops and of its helpers', in one reading."""
    counts = [0, 0]
    for type_, event_step, data in reversed(events):
        if type_ == "gate" and session is not None and data.get("session", session) != session:
            continue
        if type_ != "gate" or event_step != step_id:
            break
        kind = data.get("event")
        if kind == "prompt":
            break
        if kind == "stop" and data.get("decision") == "block":
            counts[bool(data.get("agent"))] += 1
    return counts[0], counts[1]


def compacted_since_prompt(
    events: Sequence[tuple[str, Mapping[str, Any]]], session: str | None = None
) -> bool:
    """Whether the gate recorded a compaction after the last prompt or session start,
    reading the run's events from the newest; with `session` (the bound one), the
    gate's records of other sessions are passed over."""
    for type_, data in reversed(events):
        if type_ != "gate" or (session is not None and data.get("session", session) != session):
            continue
        kind = data.get("event")
        if kind == "compact":
            return True
        if kind in ("prompt", "session"):
            return False
    return False
