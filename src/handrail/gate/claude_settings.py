"""Whether Claude Code's settings keep the gate installed: read when Claude Code says
a settings file changed during a session (its `ConfigChange` hook), so that a change
that takes the gate's hooks out is refused while a run is active.

The files are the ones Claude Code merges, found from the project folder and the home
folder, never from a path the hook input names: `.claude/settings.json`,
`.claude/settings.local.json` and `~/.claude/settings.json`. A handler counts as the
gate's only when it is what `handrail gate install claude-code` writes, to the letter:
the command line `PROGRAM gate EVENT --harness claude-code OPTIONS` for the event it is
listed under, PROGRAM `handrail`, the absolute path of the handrail that runs this
hook (or that PATH finds) or what `gate install` writes from here, OPTIONS this hook's
own (`--database`, `--require-run`, `--on-error`), or `--server URL` and those when a
server answers; an HTTP hook only to `/hooks/claude-code` of the scheme, host and port
that the installed SessionStart command's `--server` names. handrail's plugin enabled
from the marketplace that integrations/ ships counts as the hooks it brings. A file that
is not a regular file, is too large or is not JSON holds nothing.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import sys
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import SplitResult, urlsplit

from handrail.gate import program
from handrail.gate.claude_code import EVENTS
from handrail.gate.json_settings import runs_the_gate

HTTP_PATH = "/hooks/claude-code"
# handrail's plugin from the marketplace integrations/ ships (.claude-plugin/marketplace.json)
PLUGIN_SOURCES = ("handrail@handrail-local",)
PROGRAM = "handrail"
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


class Installed(NamedTuple):
    """What `gate install` wrote, as the running hook knows it: the programs a command may
    name, and the hook's own options in the order install writes them."""

    programs: frozenset[str]
    options: tuple[str, ...]  # without --server: a ConfigChange hook never asks a server
    without_database: tuple[str, ...]  # the same less --database, which --server excludes


def installed_as(database: str | None, require_run: str | None, on_error: str) -> Installed:
    """The installed form for a hook run with these options."""
    programs = {PROGRAM}
    found = shutil.which(PROGRAM)
    if found:
        programs.add(found)
    running = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(running) == PROGRAM:
        programs.add(running)
    programs = {shlex.join([name]) for name in programs} | {shlex.join(program.words())}
    rest: list[str] = []
    if require_run:
        rest += ["--require-run", require_run]
    if on_error != "allow":
        rest += ["--on-error", on_error]
    options = (*(("--database", database) if database else ()), *rest)
    return Installed(frozenset(programs), options, tuple(rest))


EVENT_OF = {name: event for event, (name, _) in EVENTS.items()}
COMMAND_ONLY = ("SessionStart",)  # Claude Code runs no HTTP hook for it


def command_server(handler: Any, name: str, installed: Installed) -> tuple[bool, str | None]:
    """Whether a command handler is the gate's, as installed for hook `name`, and the
    `--server` it names (None: it asks the store)."""
    if not isinstance(handler, dict) or handler.get("type") != "command" or name not in EVENT_OF:
        return False, None
    command = handler.get("command")
    if not isinstance(command, str):
        return False, None
    try:
        words = shlex.split(command)
    except ValueError:
        return False, None
    found = program.split(command)
    if shlex.join(words) != command or found is None or shlex.join(found[0]) not in installed.programs:
        return False, None
    words = [PROGRAM, *found[1]]  # the rest reads alike whichever words name the program
    if len(words) < 5:
        return False, None
    if words[1:5] != ["gate", EVENT_OF[name], "--harness", "claude-code"]:
        return False, None
    tail = tuple(words[5:])
    if tail == installed.options:
        return True, None
    if len(tail) >= 2 and tail[0] == "--server" and tail[2:] == installed.without_database:
        return True, tail[1]
    return False, None


def http_ours(handler: Any, name: str, servers: Collection[SplitResult]) -> bool:
    """Whether an HTTP handler posts to the gate's path of the server the gate was
    installed with."""
    if not isinstance(handler, dict) or handler.get("type") != "http" or name in COMMAND_ONLY:
        return False
    url = handler.get("url")
    if not isinstance(url, str) or name not in EVENT_OF:
        return False
    try:
        parts = urlsplit(url)
        place = (parts.scheme, parts.hostname, parts.port)
    except ValueError:
        return False
    return parts.path == HTTP_PATH and any(place == (s.scheme, s.hostname, s.port) for s in servers)


def missing_hooks(
    project: str, home: str | None = None, installed: Installed | None = None
) -> tuple[str, ...]:
    """The gate's hook events that the settings no longer hold: () when all are there
    (or handrail's plugin is enabled), `disableAllHooks` when that turns every hook off."""
    installed = installed or installed_as(None, None, "allow")
    handlers: list[tuple[str, Any]] = []
    plugins: dict[str, Any] = {}
    for path in files(project, home if home is not None else str(Path.home())):
        body = _load(path)
        if body.get(DISABLED) is True:
            return (DISABLED,)
        enabled = body.get("enabledPlugins")
        if isinstance(enabled, dict):
            plugins.update(enabled)
        handlers += list(_handlers(body.get("hooks")))
    if any(plugins.get(source) is True for source in PLUGIN_SOURCES):
        return ()
    present: set[str] = set()
    servers: list[SplitResult] = []
    for name, handler in handlers:
        ours, server = command_server(handler, name, installed)
        if ours:
            present.add(name)
        if ours and server is not None and name in COMMAND_ONLY:
            try:
                servers.append(urlsplit(server))
            except ValueError:
                continue
    present.update(name for name, handler in handlers if http_ours(handler, name, servers))
    return tuple(name for name, _ in EVENTS.values() if name not in present)


def _handlers(hooks: Any) -> Sequence[tuple[str, Any]]:
    """Each handler of a settings file's `hooks`, with the hook it is listed under."""
    found: list[tuple[str, Any]] = []
    for name, groups in hooks.items() if isinstance(hooks, Mapping) else ():
        for group in groups if isinstance(groups, list) else ():
            listed = group.get("hooks") if isinstance(group, dict) else None
            found += [(name, handler) for handler in listed] if isinstance(listed, list) else []
    return found


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
