"""The gate's decision (spec/gate.md): a pure function of the active run's facts, the
current step's policy and one harness-neutral event (their types are runs/gate.py's),
returning the verdict and the `gate` event to record."""

from __future__ import annotations

from typing import TYPE_CHECKING

from handrail.rules.shell_line import commands, glob_matches
from handrail.runs.gate import ACTIVE, Action, Decision, Protected, other_session, own_tool
from handrail.runs.gate_protected import protection
from handrail.runs.gate_texts import context, cut, held_elsewhere, reminder

if TYPE_CHECKING:
    from typing import Any

    from handrail.model.step_policy import GateRule, Policy
    from handrail.runs.gate import GateEvent, Options, RunFacts

TARGET_CHARS = 200  # how much of a target a gate event keeps


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
        text = context(run) + ("\n" + held_elsewhere(run) if other else "")
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
    what = cut(action.words(run.workspace, event.cwd), TARGET_CHARS)
    reason = (
        f"handrail: the step this session was started for is accepted (run {run.run_id}); {what} "
        "would belong to a later step, which handrail drive starts a fresh session for. Stop here."
    )
    return Decision("deny", reason, _data(event, "deny:driven-step-accepted", reason, run=run))


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
            data["action"] = cut(event.action.words(run.workspace, event.cwd), TARGET_CHARS)
    if event.outcome is not None:
        data["outcome"] = cut(event.outcome, TARGET_CHARS)
    if reason is not None:
        data["reason"] = reason
    if event.session:
        data["session"] = event.session[:100]
    if event.agent:
        data["agent"] = event.agent[:100]
    return data
