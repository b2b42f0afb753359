"""Whether Claude Code's settings keep the gate installed: read when Claude Code says
a settings file changed during a session (its `ConfigChange` hook), so that a change
that takes the gate's hooks out is refused while a run is active.

The files are the ones Claude Code merges, found from the project folder and the home
folder, never from a path the hook input names: `.claude/settings.json`,
`.claude/settings.local.json` and `~/.claude/settings.json`. Each is read as the
gate's hooks are written (`handrail gate ... --harness claude-code`, or an HTTP hook
to `/hooks/claude-code`); a handrail plugin enabled in them counts as the hooks it
brings. A file that is not a regular file, is too large or is not JSON holds nothing.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from handrail.gate.claude_code import EVENTS
from handrail.gate.json_settings import runs_the_gate

HTTP_PATH = "/hooks/claude-code"
PLUGIN = "handrail"
MAX_SETTINGS = 1 << 20
DISABLED = "disableAllHooks"


def is_gate_handler(handler: Any) -> bool:
    """Whether one hook handler of a settings file is the gate's."""
    if not isinstance(handler, dict):
        return False
    if handler.get("type") == "http":
        return urlsplit(str(handler.get("url", ""))).path.endswith(HTTP_PATH)
    return handler.get("type") == "command" and runs_the_gate(handler.get("command", ""), "claude-code")


def files(project: str, home: str) -> list[Path]:
    """Claude Code's settings files, in the order it merges them (later ones win)."""
    return [
        Path(home) / ".claude" / "settings.json",
        Path(project) / ".claude" / "settings.json",
        Path(project) / ".claude" / "settings.local.json",
    ]


def missing_hooks(project: str, home: str | None = None) -> tuple[str, ...]:
    """The gate's hook events that the settings no longer hold: () when all are there
    (or a handrail plugin is enabled), `disableAllHooks` when that turns every hook off."""
    present: set[str] = set()
    plugins: dict[str, Any] = {}
    for path in files(project, home if home is not None else str(Path.home())):
        body = _load(path)
        if body.get(DISABLED) is True:
            return (DISABLED,)
        enabled = body.get("enabledPlugins")
        if isinstance(enabled, dict):
            plugins.update(enabled)
        hooks = body.get("hooks")
        for name, groups in hooks.items() if isinstance(hooks, dict) else ():
            for group in groups if isinstance(groups, list) else ():
                handlers = group.get("hooks") if isinstance(group, dict) else None
                if isinstance(handlers, list) and any(is_gate_handler(h) for h in handlers):
                    present.add(name)
    if any(name.split("@", 1)[0] == PLUGIN and on is True for name, on in plugins.items()):
        return ()
    return tuple(name for name, _ in EVENTS.values() if name not in present)


def _load(path: Path) -> dict[str, Any]:
    """A settings file's object; {} for one that is missing or that Claude Code could not
    read either. Opened without blocking: a FIFO in its place holds nothing."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return {}
    with os.fdopen(fd, "rb") as opened:
        if not stat.S_ISREG(os.fstat(opened.fileno()).st_mode):
            return {}
        data = opened.read(MAX_SETTINGS + 1)
    if len(data) > MAX_SETTINGS:
        return {}
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        return {}
    return body if isinstance(body, dict) else {}
