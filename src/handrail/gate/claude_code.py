"""Claude Code's command hooks: its hook JSON in, its answers out
(https://code.claude.com/docs/en/hooks).

Allow is silence and exit 0: "allow" in Claude Code's words would also skip the
person's permission prompt, and the gate never approves for a person. A malformed
input is exit 1 with an empty stdout: Claude Code's non-blocking error, and a JSON
object on stdout would be obeyed even then.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from handrail.gate import Answer, HookInputError, hook_input
from handrail.runs.gate import Action, Decision, GateEvent

if TYPE_CHECKING:
    from typing import Any

    from handrail.runs.gate import EventKind

HARNESS = "claude-code"

# the command's event name -> (Claude Code's hook_event_name, the gate's kind)
EVENTS: dict[str, tuple[str, EventKind]] = {
    "session-start": ("SessionStart", "session"),
    "user-prompt-submit": ("UserPromptSubmit", "prompt"),
    "pre-tool-use": ("PreToolUse", "before-tool"),
    "post-tool-use": ("PostToolUse", "after-tool"),
    "post-tool-use-failure": ("PostToolUseFailure", "after-tool"),
    "stop": ("Stop", "stop"),
    "subagent-stop": ("SubagentStop", "stop"),
    "config-change": ("ConfigChange", "config"),
}
# the sources of a ConfigChange that hold hooks and that Claude Code lets a hook refuse
SETTINGS_SOURCES = ("user_settings", "project_settings", "local_settings")
EVENT_OF = {name: event for event, (name, _) in EVENTS.items()}
TOOLS = hook_input.Tools(
    edit={
        "Write": ("file_path",),
        "Edit": ("file_path",),
        "MultiEdit": ("file_path",),
        "NotebookEdit": ("notebook_path",),
    },
    read={"Read": ("file_path",), "Glob": ("path",), "Grep": ("path",), "LSP": ("file_path",)},
    shell=("Bash", "PowerShell", "Monitor"),
    web={"WebFetch": "url", "WebSearch": "query"},
)
# the harness's own control of the conversation: not actions on the workspace
CONTROL_TOOLS = frozenset(
    {
        "AskUserQuestion",
        "EnterPlanMode",
        "ExitPlanMode",
        "TodoWrite",
        "TodoRead",
        "Task",
        "Agent",
        "TaskCreate",
        "TaskUpdate",
        "TaskList",
        "TaskGet",
        "TaskOutput",
        "TaskStop",
        "Skill",
        "ListMcpResourcesTool",
        "ReadMcpResourceTool",
    }
)


def read_input(data: bytes, event: str) -> GateEvent:
    """The gate's event from Claude Code's hook JSON (unknown fields ignored)."""
    return read_event(data, event)[1]


def read_posted(data: bytes) -> tuple[str, GateEvent]:
    """An HTTP hook's body (one address for every event): the event it names, and the
    gate's event."""
    return read_event(data, None)


def read_event(data: bytes, event: str | None) -> tuple[str, GateEvent]:
    """`event`: the event the hook was installed for; None: the event the input names."""
    body = hook_input.parse(data)
    posted = event is None
    if event is None:
        said = body.get("hook_event_name")
        event = EVENT_OF.get(said) if isinstance(said, str) else None
        if event is None:
            raise HookInputError(
                f"hook_event_name is {hook_input.shown(said)}, not an event the gate answers"
            )
    read = hook_input.opened(body, EVENTS[event])
    name, kind, cwd, session = read.name, read.kind, read.cwd, read.session
    if kind == "session":
        return event, hook_input.session_start(read)
    if kind == "prompt":
        return event, GateEvent("prompt", cwd, session)
    if kind == "config":
        if posted:  # the settings are files where Claude Code runs, which a server does not read
            raise HookInputError("ConfigChange is answered by the command hook, not over HTTP")
        source = body.get("source")
        return event, GateEvent("config", cwd, session, source if isinstance(source, str) else None)
    if kind == "stop":
        # Claude Code's own helper agents stop with an empty agent_type: never refuse them
        internal = name == "SubagentStop" and body.get("agent_type", "") in ("", None)
        # a helper's stops are counted apart from the agent's own (SubagentStop names it)
        helper = body.get("agent_id") or body.get("agent_type") or "helper"
        agent = str(helper) if name == "SubagentStop" else None
        return event, GateEvent("stop", cwd, session, internal=internal, agent=agent)
    tool = hook_input.tool_name(body, name)
    tool_input = body.get("tool_input")
    action = action_of(tool, tool_input if isinstance(tool_input, Mapping) else {}, cwd)
    outcome = None
    if kind == "after-tool":
        error = body.get("error")
        outcome = (
            "ok" if name == "PostToolUse" else "failed: " + (str(error).split("\n", 1)[0] if error else "")
        )
    named = tool_input.get("runId") if isinstance(tool_input, Mapping) else None
    run_id = named[:100] if isinstance(named, str) and action is not None and action.kind == "mcp" else None
    if kind == "after-tool" and run_id is not None and action and action.target.endswith("/workflow_claim"):
        run_id = hook_input.claimed(body.get("tool_response"))  # the branch it claimed, not the parent
    return event, GateEvent(kind, cwd, session, action=action, outcome=outcome, run_id=run_id)


def action_of(tool: str, tool_input: Mapping[str, Any], cwd: str) -> Action | None:
    """A Claude Code tool call in the gate's words; None for the harness's own control."""
    action = hook_input.workspace_action(tool, tool_input, cwd, TOOLS)
    if action is not None:
        return action
    if tool.startswith("mcp__"):
        server, _, name = tool[5:].partition("__")
        if server.startswith("plugin_"):
            # mcp__plugin_<plugin>_<server>__<tool>: the server is what follows the plugin's name
            server = server[7:].partition("_")[2] or server[7:]
        return Action("mcp", f"{server}/{name}", tool)
    if tool in CONTROL_TOOLS:
        return None
    return Action("tool", tool, tool)


def answer(event: str, decision: Decision) -> Answer:
    name = EVENTS[event][0]
    if name == "ConfigChange" and decision.verdict == "block":
        # Claude Code keeps a ConfigChange's reason to itself: the person is told by systemMessage
        body = {"decision": "block", "reason": decision.text, "systemMessage": decision.text}
        return Answer(hook_input.dump(body), "", 0)
    return hook_input.claude_style_answer(name, decision, ("Stop", "SubagentStop"))


def warning(event: str, text: str) -> Answer:
    return hook_input.system_message(text)


malformed = hook_input.malformed
