"""Gemini CLI's command hooks: its hook JSON in, its answers out
(https://geminicli.com/docs/hooks/reference).

Gemini CLI parses stdout as JSON on exit 0, so every answer is a JSON object: `{}`
lets the action go on. A deny is `decision: "deny"` with the reason, which BeforeTool
sends to the agent as the tool's error and AfterAgent sends as a new prompt (the
refused stop). Any exit code other than 0 and 2 is a warning and the CLI goes on:
input the gate cannot read is exit 1.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from handrail.gate import Answer, hook_input
from handrail.runs.gate import Action, Decision, GateEvent

if TYPE_CHECKING:
    from typing import Any

    from handrail.runs.gate import EventKind

HARNESS = "gemini"
PROJECT_FOLDER = "GEMINI_PROJECT_DIR"

# the command's event name -> (Gemini CLI's hook_event_name, the gate's kind)
EVENTS: dict[str, tuple[str, EventKind]] = {
    "session-start": ("SessionStart", "session"),
    "before-agent": ("BeforeAgent", "prompt"),
    "before-tool": ("BeforeTool", "before-tool"),
    "after-tool": ("AfterTool", "after-tool"),
    "after-agent": ("AfterAgent", "stop"),
    # advisory, and no context follows it: recorded, so the next prompt gets the context
    "pre-compress": ("PreCompress", "compact"),
}
# releases have named the path field differently: the first one present counts
PATH_FIELDS = ("file_path", "absolute_path", "path", "dir_path", "directory")
READ_TOOLS = ("read_file", "read_many_files", "list_directory", "glob", "search_file_content", "grep_search")
TOOLS = hook_input.Tools(
    edit=dict.fromkeys(("write_file", "replace"), PATH_FIELDS),
    read=dict.fromkeys(READ_TOOLS, PATH_FIELDS),
    shell=("run_shell_command",),
    web={"web_fetch": "prompt", "google_web_search": "query"},
)
CONTROL_TOOLS = frozenset({"write_todos"})
MCP_PREFIX = "mcp_"


def read_events(data: bytes, event: str) -> list[GateEvent]:
    call = hook_input.tool_call(data, EVENTS[event])
    if isinstance(call, list):
        return call
    read, body = call.read, call.read.body
    action = action_of(call.tool, call.tool_input, hook_input.mapping(body.get("mcp_context")), read.cwd)
    outcome = None
    if read.kind == "after-tool":
        error = hook_input.mapping(body.get("tool_response")).get("error")
        outcome = "failed: " + str(error).split("\n", 1)[0] if error else "ok"
    return [GateEvent(read.kind, read.cwd, read.session, action=action, outcome=outcome)]


def action_of(
    tool: str, tool_input: Mapping[str, Any], mcp_context: Mapping[str, Any], cwd: str
) -> Action | None:
    """A Gemini CLI tool call in the gate's words; None for its own to-do list."""
    action = hook_input.workspace_action(tool, tool_input, cwd, TOOLS)
    if action is not None:
        return action
    if tool.startswith(MCP_PREFIX):
        return Action("mcp", mcp_target(tool, mcp_context), tool)
    if tool in CONTROL_TOOLS:
        return None
    return Action("tool", tool, tool)


def mcp_target(tool: str, mcp_context: Mapping[str, Any]) -> str:
    """`server/tool` of an MCP tool call. Gemini CLI 0.61 names it `mcp_SERVER_TOOL` (the
    server's name made a valid function name) and gives `mcp_context` with the server's
    and the tool's own names, which split it unambiguously; earlier releases wrote
    `mcp__SERVER__TOOL`. Without `mcp_context`, the server ends at the first `_`, as
    Gemini CLI itself reads the name."""
    server = hook_input.text(mcp_context.get("server_name"))
    name = hook_input.text(mcp_context.get("tool_name"))
    if server and name:
        return f"{server}/{name}"
    rest = tool[len(MCP_PREFIX) :]
    if rest.startswith("_"):
        found_server, _, found_name = rest[1:].partition("__")
    else:
        valid = _valid_name(server) if server else ""
        if valid and rest.startswith(valid + "_"):
            found_server, found_name = valid, rest[len(valid) + 1 :]
        else:
            found_server, _, found_name = rest.partition("_")
    return f"{server or found_server}/{name or found_name}"


def _valid_name(server: str) -> str:
    """A server's name as Gemini CLI writes it into a tool's name."""
    return re.sub(r"[^a-zA-Z0-9_\-.:]", "_", server)


def answer(event: str, decision: Decision) -> Answer:
    name = EVENTS[event][0]
    body: dict[str, Any] = {}
    if decision.verdict in ("deny", "block") and name in ("BeforeTool", "AfterTool", "AfterAgent"):
        body = {"decision": "deny", "reason": decision.text}
    elif decision.verdict == "context" and name in ("SessionStart", "BeforeAgent"):
        body = {"hookSpecificOutput": {"hookEventName": name, "additionalContext": decision.text}}
    return Answer(hook_input.dump(body), "", 0)


def warning(event: str, text: str) -> Answer:
    return hook_input.system_message(text)


malformed = hook_input.malformed
