"""Cursor's agent hooks: its hook JSON in, its answers out (https://cursor.com/docs/hooks).

Cursor reads a JSON object on stdout: `{}` lets the action go on (a `permission` of
"allow" would also skip the person's own approval, which the gate never gives). A
deny is `permission: "deny"` with `user_message` for the person and `agent_message`
for the agent. Cursor has no refusal of a stop: its `stop` hook answers with a
`followup_message` that Cursor sends as the next prompt, so a refused stop is that
prompt, and a stop the person aborted or that ended in an error is never refused.
Cursor gives no MCP server name: `beforeMCPExecution` names the server's command or
URL, and handrail's own server is the one whose command runs `handrail start`.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING

from handrail.gate import Answer, HookInputError, hook_input
from handrail.runs.gate import Action, Decision, GateEvent

if TYPE_CHECKING:
    from typing import Any

    from handrail.runs.gate import EventKind

HARNESS = "cursor"
PROJECT_FOLDER = "CURSOR_PROJECT_DIR"

# the command's event name -> (Cursor's hook_event_name, the gate's kind)
EVENTS: dict[str, tuple[str, EventKind]] = {
    "session-start": ("sessionStart", "session"),
    "pre-tool-use": ("preToolUse", "before-tool"),
    "post-tool-use": ("postToolUse", "after-tool"),
    "post-tool-use-failure": ("postToolUseFailure", "after-tool"),
    "before-shell-execution": ("beforeShellExecution", "before-tool"),
    "before-mcp-execution": ("beforeMCPExecution", "before-tool"),
    "before-read-file": ("beforeReadFile", "before-tool"),
    "stop": ("stop", "stop"),
}
PERMISSION_EVENTS = ("preToolUse", "beforeShellExecution", "beforeMCPExecution", "beforeReadFile")
PATH_FIELDS = ("file_path", "path", "target_file", "target_directory")
EDIT_TOOLS = ("Write", "Edit", "StrReplace", "MultiEdit", "Delete", "EditNotebook", "TabWrite")
TOOLS = hook_input.Tools(
    edit=dict.fromkeys(EDIT_TOOLS, PATH_FIELDS),
    read=dict.fromkeys(("Read", "Grep", "Glob", "LS", "SemanticSearch", "ReadLints"), PATH_FIELDS),
    shell=("Shell",),
    web={"WebFetch": "url", "WebSearch": "query"},
)
CONTROL_TOOLS = frozenset({"Task", "TodoWrite", "AskQuestion", "CreatePlan", "SwitchMode"})
STOPPED_BY_PERSON = ("aborted", "error")


def read_events(data: bytes, event: str) -> list[GateEvent]:
    body = hook_input.parse(data)
    name, kind = EVENTS[event]
    hook_input.check_event(body, name)
    cwd = working_folder(body, name)
    session = hook_input.first_text(body, "conversation_id", "session_id") or None
    if kind == "session":
        return [GateEvent("session", cwd, session, "startup")]
    if kind == "stop":
        return [GateEvent("stop", cwd, session, internal=body.get("status") in STOPPED_BY_PERSON)]
    if name == "beforeShellExecution":
        action: Action | None = Action("shell", hook_input.text(body.get("command")), "Shell")
    elif name == "beforeReadFile":
        action = Action("read", hook_input.text(body.get("file_path")) or cwd, "Read")
    elif name == "beforeMCPExecution":
        action = Action("mcp", f"{mcp_server(body)}/{hook_input.tool_name(body, name)}", "MCP")
    else:
        tool = hook_input.tool_name(body, name)
        action = action_of(tool, hook_input.mapping(body.get("tool_input")), cwd)
    outcome = None
    if kind == "after-tool":
        error = body.get("error_message") or body.get("error")
        outcome = (
            "ok" if name == "postToolUse" else "failed: " + (str(error).split("\n", 1)[0] if error else "")
        )
    return [GateEvent(kind, cwd, session, action=action, outcome=outcome)]


def working_folder(body: Mapping[str, Any], name: str) -> str:
    """The command's `cwd` where Cursor gives one, else the first workspace root."""
    cwd = body.get("cwd")
    if isinstance(cwd, str) and cwd.startswith("/"):
        return cwd
    roots = body.get("workspace_roots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str) and roots[0].startswith("/"):
        return roots[0]
    raise HookInputError(f"{name} input has no absolute cwd or workspace_roots")


def mcp_server(body: Mapping[str, Any]) -> str:
    """The server's name as far as Cursor tells it: `handrail` for handrail's own
    server, else its program's name or its URL's host."""
    command = hook_input.text(body.get("command"))
    if command:
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        program = os.path.basename(words[0]) if words else ""
        if program == "handrail" and words[1:2] == ["start"]:
            return "handrail"
        return program or "?"
    url = hook_input.text(body.get("url"))
    if not url:
        return "?"
    from urllib.parse import urlsplit  # lazy: a hook's start-up, and few servers are remote

    return urlsplit(url).hostname or "?"


def action_of(tool: str, tool_input: Mapping[str, Any], cwd: str) -> Action | None:
    """A Cursor tool call in the gate's words; None for its own control of the
    conversation, and for MCP tools, which beforeMCPExecution checks with their server."""
    action = hook_input.workspace_action(tool, tool_input, cwd, TOOLS)
    if action is not None:
        return action
    if tool in CONTROL_TOOLS or tool.startswith(("MCP:", "mcp__", "mcp_")):
        return None
    return Action("tool", tool, tool)


def answer(event: str, decision: Decision) -> Answer:
    name = EVENTS[event][0]
    body: dict[str, Any] = {}
    if decision.verdict == "deny" and name in PERMISSION_EVENTS:
        body = {"permission": "deny"}
        if name != "beforeReadFile":  # beforeReadFile reads `permission` only
            body.update(user_message=decision.text, agent_message=decision.text)
    elif decision.verdict == "block" and name == "stop":
        body = {"followup_message": decision.text}
    elif decision.verdict == "context" and name == "sessionStart":
        body = {"additional_context": decision.text}
    return Answer(hook_input.dump(body), "", 0)


def warning(event: str, text: str) -> Answer:
    return Answer("{}", text + "\n", 0)


malformed = hook_input.malformed
