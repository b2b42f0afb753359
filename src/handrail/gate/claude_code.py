"""Claude Code's command hooks: its hook JSON in, its answers out
(https://code.claude.com/docs/en/hooks).

Allow is silence and exit 0: "allow" in Claude Code's words would also skip the
person's permission prompt, and the gate never approves for a person. A malformed
input is exit 1 with an empty stdout: Claude Code's non-blocking error, and a JSON
object on stdout would be obeyed even then.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from handrail.gate import Answer, HookInputError, hook_input
from handrail.runs.gate import Action, Decision, EventKind, GateEvent

HARNESS = "claude-code"
NON_BLOCKING = 1

# the command's event name -> (Claude Code's hook_event_name, the gate's kind)
EVENTS: dict[str, tuple[str, EventKind]] = {
    "session-start": ("SessionStart", "session"),
    "user-prompt-submit": ("UserPromptSubmit", "prompt"),
    "pre-tool-use": ("PreToolUse", "before-tool"),
    "post-tool-use": ("PostToolUse", "after-tool"),
    "post-tool-use-failure": ("PostToolUseFailure", "after-tool"),
    "stop": ("Stop", "stop"),
    "subagent-stop": ("SubagentStop", "stop"),
}
EVENT_OF = {name: event for event, (name, _) in EVENTS.items()}
EDIT_TOOLS = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
READ_TOOLS = {"Read": "file_path", "Glob": "path", "Grep": "path", "LSP": "file_path"}
SHELL_TOOLS = ("Bash", "PowerShell", "Monitor")
WEB_TOOLS = {"WebFetch": "url", "WebSearch": "query"}
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
    if event is None:
        said = body.get("hook_event_name")
        event = EVENT_OF.get(said) if isinstance(said, str) else None
        if event is None:
            raise HookInputError(
                f"hook_event_name is {hook_input.shown(said)}, not an event the gate answers"
            )
    name, kind = EVENTS[event]
    hook_input.check_event(body, name)
    cwd = hook_input.absolute_cwd(body, name)
    session = body.get("session_id") if isinstance(body.get("session_id"), str) else None
    if kind == "session":
        source = body.get("source")
        return event, GateEvent("session", cwd, session, source if isinstance(source, str) else None)
    if kind == "prompt":
        return event, GateEvent("prompt", cwd, session)
    if kind == "stop":
        # Claude Code's own helper agents stop with an empty agent_type: never refuse them
        internal = name == "SubagentStop" and body.get("agent_type", "") in ("", None)
        return event, GateEvent("stop", cwd, session, internal=internal)
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
    return event, GateEvent(kind, cwd, session, action=action, outcome=outcome, run_id=run_id)


def action_of(tool: str, tool_input: Mapping[str, Any], cwd: str) -> Action | None:
    """A Claude Code tool call in the gate's words; None for the harness's own control."""
    if tool in EDIT_TOOLS:
        return Action("edit", _text(tool_input.get(EDIT_TOOLS[tool])), tool)
    if tool in READ_TOOLS:
        return Action("read", _text(tool_input.get(READ_TOOLS[tool])) or cwd, tool)
    if tool in SHELL_TOOLS:
        return Action("shell", _text(tool_input.get("command")), tool)
    if tool in WEB_TOOLS:
        return Action("web", _text(tool_input.get(WEB_TOOLS[tool])), tool)
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
    if decision.verdict == "deny" and name == "PreToolUse":
        body: dict[str, Any] = {
            "hookSpecificOutput": {
                "hookEventName": name,
                "permissionDecision": "deny",
                "permissionDecisionReason": decision.text,
            }
        }
    elif decision.verdict == "block" and name in ("Stop", "SubagentStop"):
        body = {"decision": "block", "reason": decision.text}
    elif decision.verdict == "context" and name in ("SessionStart", "UserPromptSubmit"):
        body = {"hookSpecificOutput": {"hookEventName": name, "additionalContext": decision.text}}
    else:
        return Answer("", "", 0)
    return Answer(_dump(body), "", 0)


def warning(event: str, text: str) -> Answer:
    """The store could not be read and the gate lets the action through: a line the
    person sees (systemMessage), and the same on stderr."""
    return Answer(_dump({"systemMessage": text}), text + "\n", 0)


def malformed(message: str) -> Answer:
    return Answer("", f"handrail gate: {message}\n", NON_BLOCKING)


_dump = hook_input.dump
_text = hook_input.text
