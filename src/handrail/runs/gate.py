"""The gate's decisions (spec/gate.md): pure functions over a run, the current step's
policy and one harness-neutral event. The harness adapters (handrail/gate/) turn a
harness's hook input into a `GateEvent` and a `Decision` into its answer; the
command (cli/gate.py) reads and writes the store.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from handrail.rules.shell_line import commands, git_options, glob_matches
from handrail.runs.gate_protected import HARNESS_FILES, PROTECTED_COMMANDS

if TYPE_CHECKING:
    from typing import Any, Literal

    from handrail.model.step_policy import GateRule, Policy

    EventKind = Literal["session", "prompt", "before-tool", "after-tool", "stop", "config", "compact"]
    Verdict = Literal["allow", "deny", "block", "context"]

DEFAULT_STOP_LIMIT = 3
CONTEXT_BYTES = 2000
PROMPT_CHARS = 800
TARGET_CHARS = 200  # how much of a target a gate event keeps
OWN_SERVERS = ("handrail",)
OWN_TOOLS = (
    "workflow_start",
    "workflow_continue",
    "workflow_resume",
    "workflow_abandon",
    "workflow_list",
    "workflow_claim",
)
ACTIVE = ("active", "awaiting_approval")


# NamedTuples rather than dataclasses: a hook creates these classes on every tool call
class Action(NamedTuple):
    """What the agent is about to do (or did), in the gate's words."""

    kind: str  # edit | read | shell | mcp | web | tool
    target: str  # edit/read: a path (absolute or relative to the working folder); shell:
    # the command line; mcp: server/tool; web: the address or query; tool: its name
    tool: str  # the harness's own name for it
    # edit/read: where the path leads when a link makes it another (os.path.realpath),
    # set by the gate's store side before deciding; the decision judges both
    leads_to: str | None = None

    def words(self, workspace: str, cwd: str) -> str:
        target = self.match_target(workspace, cwd)
        return f"{self.kind}:{target}" if target else self.kind

    def match_target(self, workspace: str, cwd: str) -> str:
        """The target as rules read it: a path relative to the workspace (`/`-separated)
        when it is inside, else absolute."""
        if self.kind not in ("edit", "read"):
            return "" if self.kind == "web" else self.target
        return relative(absolute(self.target, cwd), workspace)


class GateEvent(NamedTuple):
    kind: EventKind
    cwd: str
    session: str | None = None
    source: str | None = None  # session: startup, resume, clear, compact; compact: manual, auto
    action: Action | None = None
    outcome: str | None = None  # after-tool: "ok" or "failed: ..."
    internal: bool = False  # a stop of the harness's own helper agent: never refused
    agent: str | None = None  # stop: the helper agent that stops (its refusals count apart)
    run_id: str | None = None  # before-tool: the run a call of handrail's own run tools names
    # config (a harness's settings changed): the gate's hooks the settings no longer hold
    missing: tuple[str, ...] = ()


class Protected(NamedTuple):
    """The paths an agent may not touch while a run is active."""

    paths: tuple[str, ...]  # absolute: the run store's folder and file, workflow sources
    home: str  # the person's home folder, where harness settings also live


class RunFacts(NamedTuple):
    """What a decision needs of the active run, read from the store."""

    run_id: str
    workflow_id: str
    goal: str
    status: str
    workspace: str
    step_id: str | None
    step_title: str | None
    step_prompt: str | None
    step_number: int  # 1-based place of the current step among the workflow's steps
    step_count: int
    accepted: tuple[str, ...]  # ids of the steps accepted so far, in order
    policy: Policy | None
    stop_refusals: int  # stops refused in a row at this step (by the bound session)
    workflow_folders: tuple[str, ...] = ()  # the sources of the server that started the run
    bound: str | None = None  # the harness session the run is bound to, once one was seen
    compacted: bool = False  # the bound session's context was compacted since its last prompt
    # the run waits on its branches (`branches`) or child (`child`) at this step, and no
    # open run of its tree in its workspace was found for the session: "kind:stepId"
    waiting: str | None = None
    helper_stop_refusals: int = 0  # the same, of the session's helper agents' stops
    accepted_count: int = 0  # steps accepted so far (`accepted` holds the recent events' only)


class Options(NamedTuple):
    require_run: str | None = None
    reminder: bool = True
    stop_limit: int = DEFAULT_STOP_LIMIT
    # a session `handrail drive` started for the step after this many accepted ones of run
    # `driven_run` (a branch it claims holds it as any session): done once that is accepted
    driven_from: int | None = None
    driven_run: str | None = None


class Decision(NamedTuple):
    verdict: Verdict
    text: str = ""  # the reason of a deny or block, or the context added
    record: Mapping[str, Any] | None = None  # the gate event to write, if any


def absolute(path: str, cwd: str) -> str:
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path))


def relative(path: str, folder: str) -> str:
    if path == folder:
        return "."
    prefix = folder.rstrip(os.sep) + os.sep
    return path[len(prefix) :].replace(os.sep, "/") if path.startswith(prefix) else path


def inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def decide(run: RunFacts | None, event: GateEvent, options: Options, protected: Protected) -> Decision:
    if run is None or run.status not in ACTIVE:
        return _without_run(run, event, options)
    options = options if options.driven_run in (None, run.run_id) else options._replace(driven_from=None)
    other = other_session(run, event)
    tool = event.action is not None and own_tool(event.action.target)  # one of handrail's run tools
    takes = other and event.run_id == run.run_id and tool
    if event.kind == "session":
        if other and options.driven_from is not None and not event.agent:  # the driver started it
            return Decision("context", context(run), {**_data(event, "context"), "bind": True})
        text = context(run) + ("\n" + _held_elsewhere(run) if other else "")
        return _record(Decision("context", text), event, run)
    if event.kind == "prompt":
        if run.compacted and not other:  # a harness that adds no context after compaction: now
            return _record(Decision("context", context(run)), event, run)
        if not options.reminder:
            return Decision("allow", record=_data(event, "allow"))
        return _record(Decision("context", reminder(run)), event, run)
    if event.kind == "after-tool":  # a claim's answer names the branch it binds (gate/hook_input.py)
        record = _data(event, "record", run=run)
        return Decision("allow", record={**record, "bind": True} if takes else record)
    if event.kind == "config":
        return _config(run, event)
    if event.kind == "compact":
        if run.compacted and not other:
            # one is pending already: a harness that announces compaction before each request
            # (Gemini CLI 0.61's PreCompress) would fill the timeline with the same event
            return Decision("allow")
        return Decision("allow", record=_data(event, "record"))
    if event.kind == "stop":
        if other and not event.internal:  # the bound session's stops are the ones held back
            return Decision("allow", record=_data(event, "allow:other-session"))
        return _stop(run, event, options)
    if takes:  # this session takes the run over by calling its run tools with the run's id
        return Decision("allow", record={**_data(event, "bind"), "bind": True})
    if options.driven_from is not None and run.accepted_count > options.driven_from:
        return _driven_done(run, event) or _before_tool(run, event, protected)
    return _before_tool(run, event, protected)


DRIVEN_DONE_TOOLS = ("workflow_continue", "workflow_claim")  # what would carry it into a later step


def _driven_done(run: RunFacts, event: GateEvent) -> Decision | None:
    """A session `handrail drive` started for one step, once that step is accepted: it
    may read and stop, but its edits, commands and submissions would belong to a later
    step, which the driver gives a fresh session (and budget)."""
    action = event.action
    if action is None or action.kind not in ("edit", "shell", "mcp"):
        return None
    if action.kind == "mcp" and not (own_tool(action.target) and action.target.endswith(DRIVEN_DONE_TOOLS)):
        return None
    what = _cut(action.words(run.workspace, event.cwd), TARGET_CHARS)
    reason = (
        f"handrail: the step this session was started for is accepted (run {run.run_id}); {what} "
        "would belong to a later step, which handrail drive starts a fresh session for. Stop here."
    )
    return Decision("deny", reason, _data(event, "deny:driven-step-accepted", reason, run=run))


def other_session(run: RunFacts, event: GateEvent) -> bool:
    """The event comes from a harness session other than the one the run is bound to."""
    return event.session is not None and run.bound is not None and run.bound != event.session


def _held_elsewhere(run: RunFacts) -> str:
    return (
        f"The run is bound to another session ({_cut(run.bound or '', 60)}): this one's stops are not "
        f'held back. To carry the run on here, call workflow_resume with runId "{run.run_id}".'
    )


def _without_run(run: RunFacts | None, event: GateEvent, options: Options) -> Decision:
    need = options.require_run
    if need is None:
        return Decision("allow")
    if event.kind == "session":
        return Decision(
            "context",
            f"No handrail run is active in this workspace. Start a run of {need} with workflow_start first.",
        )
    refusal = (
        f"handrail: no run is active in this workspace; start a run of {need} with workflow_start first."
    )
    if event.kind == "before-tool" and event.action is not None and _changes_work(event.action):
        return Decision("deny", refusal)
    if event.kind == "stop" and not event.internal:
        return Decision("block", refusal)
    return Decision("allow")


def _changes_work(action: Action) -> bool:
    """An edit, a commit or a push: what a required run must exist for."""
    if action.kind == "edit":
        return True
    return action.kind == "shell" and any(
        glob_matches("git commit*", command) or glob_matches("git push*", command)
        for command in commands(action.target)
    )


def _stop(run: RunFacts, event: GateEvent, options: Options) -> Decision:
    if event.internal or run.status == "awaiting_approval" or run.step_id is None:
        return Decision("allow", record=_data(event, "allow"))
    if options.driven_from is not None and run.accepted_count > options.driven_from and not event.agent:
        return Decision("allow", record=_data(event, "allow:driven-step-accepted"))
    refusals = run.helper_stop_refusals if event.agent else run.stop_refusals
    if refusals >= options.stop_limit:
        return Decision("allow", record=_data(event, "allow:limit"))
    count = refusals + 1
    reason = (
        f"handrail: run {run.run_id} ({run.workflow_id}) is at step '{run.step_id}' "
        f"({run.step_number} of {run.step_count}) and is not finished. Complete the step and call "
        f"workflow_continue with its output; stopping is refused {count} of {options.stop_limit} times."
    )
    return Decision("block", reason, _data(event, "block", reason))


def _config(run: RunFacts, event: GateEvent) -> Decision:
    """A settings change while the run is active: refused when it takes the gate out."""
    if not event.missing:
        return Decision("allow", record=_data(event, "allow"))
    reason = (
        f"handrail: run {run.run_id} is active and this settings change leaves out the gate's hooks "
        f"({', '.join(event.missing)}); they stay installed until the run is finished or abandoned. "
        "The change is not applied to this session."
    )
    return Decision("block", reason, _data(event, "block", reason))


def _before_tool(run: RunFacts, event: GateEvent, protected: Protected) -> Decision:
    action = event.action
    if action is None:
        return Decision("allow")
    cwd = event.cwd
    if run.workflow_folders:
        protected = Protected((*protected.paths, *run.workflow_folders), protected.home)
    why = protection(action, cwd, run.workspace, protected)
    if why is not None:
        reason = f"handrail: {why}; the agent may not do this while run {run.run_id} is active."
        return Decision("deny", reason, _data(event, "deny", reason, run=run))
    if action.kind == "mcp" and own_tool(action.target):
        return Decision("allow")
    if run.waiting is not None and run.step_id is None and action.kind in ("edit", "shell"):
        return _deny_waiting(run, event, action)
    policy = run.policy
    if policy is None:
        return Decision("allow")
    targets = [action.match_target(run.workspace, cwd)]
    if action.leads_to is not None:  # a link: judged as what it leads to too
        targets.append(Action(action.kind, action.leads_to, action.tool).match_target(run.workspace, cwd))
    if action.kind == "shell":
        targets = commands(action.target)
    for target in targets:
        for rule in policy.deny:
            if rule.matches(action.kind, target):
                return _deny(run, event, _shown(action, target), rule, policy)
    if policy.allow is not None:
        for target in targets:
            if not any(rule.matches(action.kind, target) for rule in policy.allow):
                return _deny(run, event, _shown(action, target), None, policy)
    return Decision("allow")


def _deny_waiting(run: RunFacts, event: GateEvent, action: Action) -> Decision:
    """A waiting run has no step whose rules could allow the action, and the gate found
    no branch or child the session works: refused until the session takes one."""
    kind, _, step = (run.waiting or "").partition(":")
    what = "its branches" if kind == "branches" else "its child run"
    reason = (
        f"handrail: run {run.run_id} waits on {what} at step '{step}' and has no step of its own, "
        f"so {action.kind} is refused here. Take a branch or the child first: workflow_claim, or "
        f"workflow_resume with the branch's or child's runId (workflow_resume with runId \"{run.run_id}\" "
        "lists them); its step's rules then apply."
    )
    return Decision("deny", reason, _data(event, "deny", reason, run=run))


def _shown(action: Action, target: str) -> str:
    return f"{action.kind}:{target}" if target else action.kind


def _deny(run: RunFacts, event: GateEvent, what: str, rule: GateRule | None, policy: Policy) -> Decision:
    where = f"({run.step_number} of {run.step_count}, run {run.run_id})"
    head = f"handrail: step '{run.step_id}' {where} does not allow {what}"
    if rule is not None and rule.message:
        head += f" ({rule.message})"
    allowed = (
        ""
        if policy.allow is None
        else " This step allows: "
        + (", ".join(r.text for r in policy.allow) or "nothing but handrail's run tools")
        + "."
    )
    reason = f"{head}.{allowed} Finish the step with workflow_continue, then try again."
    return Decision("deny", reason, _data(event, "deny", reason, run=run))


def own_tool(target: str) -> bool:
    server, _, tool = target.partition("/")
    return server in OWN_SERVERS and tool in OWN_TOOLS


def protection(action: Action, cwd: str, workspace: str, protected: Protected) -> str | None:
    """Why the action touches what no step may let an agent touch, or None."""
    if action.kind == "edit":
        path = absolute(action.target, cwd)
        # a link in the workspace may lead into a protected folder: the file it reaches counts
        return _protected_path(path, workspace, protected) or _protected_path(
            os.path.realpath(path), workspace, protected
        )
    if action.kind != "shell":
        return None
    for command in commands(action.target):
        # git's config keys are read in any case: `core.hookspath` is core.hooksPath
        folded = command.lower() if command.lower().startswith("git") else command
        for pattern, why in PROTECTED_COMMANDS:
            if glob_matches(pattern, command) or glob_matches(pattern.lower(), folded):
                return why
        if any("hookspath" in option.lower() for option in git_options(action.target)):
            return "the git hooks hold the run's rules; they may not be moved"
    line = _squeezed(action.target)
    for path in protected.paths:
        if path and path in line:
            return f"the command names {path}, which holds the runs and their workflows"
    for name in HARNESS_FILES:
        plain = name.removesuffix("/**")
        if plain in line:
            return f"the command names {plain}, which holds the gate's hooks"
    return None


def _squeezed(line: str) -> str:
    """A command line with `//` and `/./` read as `/`, as paths are (a quick first
    answer: what a command changes is checked after it runs)."""
    while "//" in line or "/./" in line:
        line = line.replace("//", "/").replace("/./", "/")
    return line


def _protected_path(path: str, workspace: str, protected: Protected) -> str | None:
    for folder in protected.paths:
        if folder and (inside(path, folder) or path.startswith(folder + "-")):
            return f"{path} holds the runs and their workflows"
    for base in (workspace, protected.home):
        rel = relative(path, base)
        if rel == path:
            continue
        for name in HARNESS_FILES:
            plain = name.removesuffix("/**")
            if rel == plain or (name.endswith("/**") and rel.startswith(plain + "/")):
                return f"{rel} holds the gate's hooks"
    return None


def context(run: RunFacts) -> str:
    """What an agent is told at session start and after compaction (under 2 KB)."""
    head = f"Active handrail run {run.run_id} of workflow {run.workflow_id}. Goal: {_cut(run.goal, 300)}"
    accepted = ", ".join(run.accepted) if run.accepted else "none"
    if run.step_id is None:
        lines = [
            head,
            "The run has no current step: call workflow_resume with runId to see what it waits for.",
        ]
    else:
        lines = [
            head,
            f"Current step {run.step_number} of {run.step_count}: {run.step_id} ({run.step_title}).",
        ]
        if run.status == "awaiting_approval":
            lines.append("The step waits on a person's approval (handrail runs approve, or the dashboard).")
    lines.append(f"Accepted steps: {_cut(accepted, 300)}.")
    lines.append(next_call(run))
    fixed = sum(len(line.encode()) + 1 for line in lines)
    if run.step_prompt and run.step_id is not None:
        room = max(0, min(PROMPT_CHARS, CONTEXT_BYTES - fixed - 20))
        lines.insert(2, f"Step prompt: {_cut_bytes(' '.join(run.step_prompt.split()), room)}")
    return "\n".join(lines)


def next_call(run: RunFacts) -> str:
    if run.status == "awaiting_approval":
        return f'Next call: none until a person decides; then workflow_resume with runId "{run.run_id}".'
    if run.step_id is None:
        return f'Next call: workflow_resume with runId "{run.run_id}".'
    ids = f'runId "{run.run_id}", stepId "{run.step_id}"'
    return f"Next call: workflow_continue with {ids} and the step's output."


def reminder(run: RunFacts) -> str:
    where = f"step '{run.step_id}' ({run.step_number} of {run.step_count})" if run.step_id else "no step"
    return f"handrail: run {run.run_id} is at {where}."


def _cut(text: str, chars: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"


def _cut_bytes(text: str, size: int) -> str:
    cut = text.encode()[: max(0, size - 3)].decode(errors="ignore")
    return text if len(text.encode()) <= size else cut.rstrip() + "…"


def bound_session(events: Sequence[tuple[str, Mapping[str, Any]]]) -> str | None:
    """The session of the latest `gate` event that bound the run (None: not bound yet)."""
    for type_, data in reversed(events):
        if type_ == "gate" and data.get("bind") is True and isinstance(data.get("session"), str):
            return str(data["session"])
    return None


def _record(decision: Decision, event: GateEvent, run: RunFacts) -> Decision:
    return Decision(decision.verdict, decision.text, _data(event, decision.verdict))


def _data(
    event: GateEvent, decision: str, reason: str | None = None, *, run: RunFacts | None = None
) -> dict[str, Any]:
    """The `gate` event's data: bounded, whatever the agent sent."""
    data: dict[str, Any] = {"event": event.kind, "decision": decision}
    if event.source:
        data["source"] = event.source[:40]
    if event.action is not None:
        data["tool"] = event.action.tool[:100]
        if run is not None:
            data["action"] = _cut(event.action.words(run.workspace, event.cwd), TARGET_CHARS)
    if event.outcome is not None:
        data["outcome"] = _cut(event.outcome, TARGET_CHARS)
    if reason is not None:
        data["reason"] = reason
    if event.session:
        data["session"] = event.session[:100]
    if event.agent:
        data["agent"] = event.agent[:100]
    return data


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
    count = 0
    for type_, event_step, data in reversed(events):
        if type_ == "gate" and session is not None and data.get("session", session) != session:
            continue
        if type_ != "gate" or event_step != step_id:
            break
        kind = data.get("event")
        if kind == "prompt":
            break
        if kind == "stop" and data.get("decision") == "block" and bool(data.get("agent")) == helpers:
            count += 1
    return count


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
