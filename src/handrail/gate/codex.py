"""OpenAI Codex CLI's command hooks: its hook JSON in, its answers out
(https://developers.openai.com/codex/hooks, and the JSON schemas in openai/codex
codex-rs/hooks/schema/generated).

Codex's hook contract follows Claude Code's: allow is silence and exit 0, a deny is
`hookSpecificOutput.permissionDecision: "deny"`, a refused stop is
`decision: "block"`, context is `hookSpecificOutput.additionalContext`. File edits
go through `apply_patch`, whose patch names every file it adds, changes, deletes or
moves: each is checked as an edit.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING

from handrail.gate import Answer, hook_input
from handrail.runs.gate import Action, Decision, GateEvent

if TYPE_CHECKING:
    from typing import Any

    from handrail.runs.gate import EventKind

HARNESS = "codex"
PROJECT_FOLDER = None

# the command's event name -> (Codex's hook_event_name, the gate's kind)
EVENTS: dict[str, tuple[str, EventKind]] = {
    "session-start": ("SessionStart", "session"),
    "user-prompt-submit": ("UserPromptSubmit", "prompt"),
    "pre-tool-use": ("PreToolUse", "before-tool"),
    "post-tool-use": ("PostToolUse", "after-tool"),
    "stop": ("Stop", "stop"),
}
SHELL_TOOLS = frozenset({"Bash", "shell", "exec_command", "local_shell"})
PATCH_TOOLS = frozenset({"apply_patch"})
PATCH_HEADERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
READ_TOOLS = {"view_image": "path"}
CONTROL_TOOLS = frozenset({"update_plan"})


def read_events(data: bytes, event: str) -> list[GateEvent]:
    call = hook_input.tool_call(data, EVENTS[event])
    if isinstance(call, list):
        return call
    read = call.read
    outcome = "ok" if read.kind == "after-tool" else None
    actions = actions_of(call.tool, call.tool_input, read.cwd)
    return [
        GateEvent(read.kind, read.cwd, read.session, action=action, outcome=outcome) for action in actions
    ]


def actions_of(tool: str, tool_input: Mapping[str, Any], cwd: str) -> list[Action | None]:
    """A Codex tool call in the gate's words: one action, or one per file of a patch."""
    if tool in SHELL_TOOLS:
        command = tool_input.get("command")
        if isinstance(command, list):  # the argument-list form of Codex's shell tool
            command = shlex.join(str(word) for word in command)
        return [Action("shell", hook_input.text(command), tool)]
    if tool in PATCH_TOOLS:
        paths = patch_paths(hook_input.first_text(tool_input, "command", "input", "patch"))
        return [Action("edit", path, tool) for path in paths] or [Action("edit", "", tool)]
    if tool in READ_TOOLS:
        return [Action("read", hook_input.text(tool_input.get(READ_TOOLS[tool])) or cwd, tool)]
    if tool.startswith("mcp__"):
        server, _, name = tool[5:].partition("__")
        return [Action("mcp", f"{server}/{name}", tool)]
    if tool in CONTROL_TOOLS:
        return [None]
    return [Action("tool", tool, tool)]


def patch_paths(patch: str) -> list[str]:
    """Every path an apply_patch patch names, in order, each once."""
    paths: list[str] = []
    for line in patch.splitlines():
        for header in PATCH_HEADERS:
            if line.startswith(header):
                path = line[len(header) :].strip()
                if path and path not in paths:
                    paths.append(path)
    return paths


def answer(event: str, decision: Decision) -> Answer:
    return hook_input.claude_style_answer(EVENTS[event][0], decision, ("Stop",))


def warning(event: str, text: str) -> Answer:
    return hook_input.system_message(text)


malformed = hook_input.malformed
