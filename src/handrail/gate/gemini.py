"""Gemini CLI's command hooks: its hook JSON in, its answers out
(https://geminicli.com/docs/hooks/reference).

Gemini CLI parses stdout as JSON on exit 0, so every answer is a JSON object: `{}`
lets the action go on. A deny is `decision: "deny"` with the reason, which BeforeTool
sends to the agent as the tool's error and AfterAgent sends as a new prompt (the
refused stop). Any exit code other than 0 and 2 is a warning and the CLI goes on:
input the gate cannot read is exit 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from handrail.gate import Answer, hook_input
from handrail.runs.gate import Action, Decision, EventKind, GateEvent

HARNESS = "gemini"
NON_BLOCKING = 1
PROJECT_FOLDER = "GEMINI_PROJECT_DIR"

# the command's event name -> (Gemini CLI's hook_event_name, the gate's kind)
EVENTS: dict[str, tuple[str, EventKind]] = {
    "session-start": ("SessionStart", "session"),
    "before-agent": ("BeforeAgent", "prompt"),
    "before-tool": ("BeforeTool", "before-tool"),
    "after-tool": ("AfterTool", "after-tool"),
    "after-agent": ("AfterAgent", "stop"),
}
# releases have named the path field differently: the first one present counts
PATH_FIELDS = ("file_path", "absolute_path", "path", "dir_path", "directory")
EDIT_TOOLS = frozenset({"write_file", "replace"})
READ_TOOLS = frozenset(
    {"read_file", "read_many_files", "list_directory", "glob", "search_file_content", "grep_search"}
)
SHELL_TOOLS = frozenset({"run_shell_command"})
WEB_TOOLS = {"web_fetch": "prompt", "google_web_search": "query"}
CONTROL_TOOLS = frozenset({"write_todos"})


def read_events(data: bytes, event: str) -> list[GateEvent]:
    body = hook_input.parse(data)
    name, kind = EVENTS[event]
    hook_input.check_event(body, name)
    cwd = hook_input.absolute_cwd(body, name)
    session = body.get("session_id") if isinstance(body.get("session_id"), str) else None
    if kind == "session":
        source = body.get("source")
        return [GateEvent("session", cwd, session, source if isinstance(source, str) else None)]
    if kind == "prompt" and hook_input.from_the_gate(body.get("prompt")):
        return []
    if kind in ("prompt", "stop"):
        return [GateEvent(kind, cwd, session)]
    tool = hook_input.tool_name(body, name)
    tool_input = hook_input.mapping(body.get("tool_input"))
    action = action_of(tool, tool_input, hook_input.mapping(body.get("mcp_context")), cwd)
    outcome = None
    if kind == "after-tool":
        error = hook_input.mapping(body.get("tool_response")).get("error")
        outcome = "failed: " + str(error).split("\n", 1)[0] if error else "ok"
    return [GateEvent(kind, cwd, session, action=action, outcome=outcome)]


def action_of(
    tool: str, tool_input: Mapping[str, Any], mcp_context: Mapping[str, Any], cwd: str
) -> Action | None:
    """A Gemini CLI tool call in the gate's words; None for its own to-do list."""
    if tool in EDIT_TOOLS:
        return Action("edit", hook_input.first_text(tool_input, *PATH_FIELDS), tool)
    if tool in READ_TOOLS:
        return Action("read", hook_input.first_text(tool_input, *PATH_FIELDS) or cwd, tool)
    if tool in SHELL_TOOLS:
        return Action("shell", hook_input.text(tool_input.get("command")), tool)
    if tool in WEB_TOOLS:
        return Action("web", hook_input.text(tool_input.get(WEB_TOOLS[tool])), tool)
    if tool.startswith("mcp__"):
        server, _, name = tool[5:].partition("__")
        return Action("mcp", f"{hook_input.text(mcp_context.get('server_name')) or server}/{name}", tool)
    if tool in CONTROL_TOOLS:
        return None
    return Action("tool", tool, tool)


def answer(event: str, decision: Decision) -> Answer:
    name = EVENTS[event][0]
    body: dict[str, Any] = {}
    if decision.verdict in ("deny", "block") and name in ("BeforeTool", "AfterAgent"):
        body = {"decision": "deny", "reason": decision.text}
    elif decision.verdict == "context" and name in ("SessionStart", "BeforeAgent"):
        body = {"hookSpecificOutput": {"hookEventName": name, "additionalContext": decision.text}}
    return Answer(hook_input.dump(body), "", 0)


def warning(event: str, text: str) -> Answer:
    return Answer(hook_input.dump({"systemMessage": text}), text + "\n", 0)


def malformed(message: str) -> Answer:
    return Answer("", f"handrail gate: {message}\n", NON_BLOCKING)
