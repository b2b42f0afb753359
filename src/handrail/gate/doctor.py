"""`handrail gate doctor`: what of the gate is installed where (gate/install.py writes
it), each installed command hook run once with a minimal PATH, and whether a server the
hooks ask answers and takes the token."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from pathlib import Path

from handrail.gate import json_settings, program
from handrail.gate.claude_code import EVENTS
from handrail.gate.claude_settings import PLUGIN_SOURCES, is_gate_handler
from handrail.gate.git_hooks import HOOKS, MARK_BEGIN
from handrail.gate.install import InstallError, block_command, block_span, hooks_folder, settings_file


def doctor(args: argparse.Namespace) -> int:
    from handrail.store.open import default_url  # lazy: a hook's start-up

    lines: list[str] = []
    commands: list[tuple[str, str]] = []  # (where, command line) of each installed command hook
    plugin = False
    for scope in ("project", "user"):
        path = settings_file(scope)
        try:
            body = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
            hooks = body.get("hooks", {})
            plugin = plugin or any(body.get("enabledPlugins", {}).get(s) is True for s in PLUGIN_SOURCES)
        except (OSError, ValueError, AttributeError):
            lines.append(f"claude-code ({scope}): {path} cannot be read as JSON")
            continue
        found = sorted(
            name
            for name, groups in hooks.items()
            if isinstance(groups, list)
            and any(is_gate_handler(h) for g in groups if isinstance(g, dict) for h in g.get("hooks", []))
        )
        commands += [
            (f"claude-code ({scope}) {name}", str(h["command"]))
            for name, groups in hooks.items()
            if isinstance(groups, list)
            for g in groups
            if isinstance(g, dict)
            for h in g.get("hooks", [])
            if is_gate_handler(h) and h.get("type") == "command"
        ]
        missing = sorted(name for name, _ in EVENTS.values() if name not in found)
        state = (
            "not installed"
            if not found
            else ("installed" if not missing else "missing " + ", ".join(missing))
        )
        lines.append(f"claude-code ({scope}): {state} in {path}")
    for harness in json_settings.HARNESSES.values():
        for scope in ("project", "user"):
            lines.append(_json_state(harness, scope))
            commands += _json_commands(harness, scope)
    try:
        folder = hooks_folder()
        have = [h for h in HOOKS if (folder / h).exists() and MARK_BEGIN in (folder / h).read_text("utf-8")]
        lines.append(f"git: {', '.join(have) or 'no hooks'} installed in {folder}")
        commands += _git_commands(folder, have)
    except (InstallError, OSError):
        lines.append("git: not a git repository here")
    problems = _probe_commands(commands, lines)
    problems += _on_path(plugin, lines)
    if args.server:
        lines.append(f"run store: the server {args.server}")
        lines.append(_server_answers(args))
        if lines[-1] != SERVER_ANSWERS:  # unreachable, or refusing the token: exit 1
            problems.append(lines[-1])
    else:
        url = args.database or default_url()
        lines.append(f"run store: {url.split('@')[-1] if '@' in url else url}")
        lines.append(_test_event(args))
    if getattr(args, "json", False):  # `gate doctor --json`: each line as {what, state}
        checks = [dict(zip(("what", "state"), line.split(": ", 1), strict=False)) for line in lines]
        print(json.dumps({"ok": not problems, "checks": checks, "problems": problems}, indent=2))
    else:
        for line in lines:
            print(line)
        for problem in problems:
            print(f"handrail gate doctor: {problem}", file=sys.stderr)
    return 1 if problems else 0


def _json_commands(harness: json_settings.Harness, scope: str) -> list[tuple[str, str]]:
    path = json_settings.settings_file(harness, scope)
    try:
        settings = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError):
        return []
    return [
        (f"{harness.name} ({scope}) {name}", command)
        for name, command in json_settings.installed_commands(harness, settings)
    ]


def _git_commands(folder: Path, have: list[str]) -> list[tuple[str, str]]:
    """Each git hook's gate call, as far as its hook and harness: git's own arguments
    and the refs on stdin are git's to give."""
    found: list[tuple[str, str]] = []
    for hook in have:
        text = (folder / hook).read_text(encoding="utf-8")
        start, end = block_span(text)
        command = block_command(text[start:end])
        found.append((f"git {hook}", (command or "(no handrail call in its block)") + " --harness git"))
    return found


def _probe_commands(commands: list[tuple[str, str]], lines: list[str]) -> list[str]:
    """Run each program the installed hooks name as the harness would (through `sh`, with
    a minimal PATH), once per program; the hooks whose program does not answer."""
    by_program: dict[str, list[tuple[str, str]]] = {}
    for where, command in commands:
        found = program.split(command)
        by_program.setdefault(shlex.join(found[0]) if found else command, []).append((where, command))
    problems: list[str] = []
    for name, hooks in by_program.items():
        why = program.probe(hooks[0][1])
        places = ", ".join(where for where, _ in hooks)
        if why is None:
            lines.append(f"hooks answer with PATH={program.MINIMAL_PATH}: {name} ({places})")
        else:
            problems.append(f"{places}: `{hooks[0][1]}`: {why}")
    return problems


def _on_path(plugin: bool, lines: list[str]) -> list[str]:
    """The plugin and the extension from integrations/ call `handrail` from PATH by design
    (their files cannot know where it is installed): say whether this PATH finds it."""
    extension = (Path.home() / ".gemini" / "extensions" / "handrail").is_dir()
    pairs = (("the Claude Code plugin", plugin), ("the Gemini CLI extension", extension))
    named = [name for name, on in pairs if on]
    if not named:
        return []
    found = shutil.which(program.NAME)
    if found:
        lines.append(f"{' and '.join(named)} call `handrail` from PATH: here that is {found}")
        return []
    return [
        f"{' and '.join(named)} call `handrail` from PATH, and this PATH has none: "
        "start the harness with handrail's folder on its PATH"
    ]


SERVER_ANSWERS = "test event: the server's hooks answer, and take the token"


def _server_answers(args: argparse.Namespace) -> str:
    """Whether the server's hooks answer with this token: an empty hook input is refused
    by a server that took the token (400; 200 while a run is active), recording nothing."""
    from handrail.gate import remote  # lazy: a hook's start-up
    from handrail.runs.gate import GateEvent  # lazy: a hook's start-up

    try:
        status, _, _ = remote.post(args, "claude-code", GateEvent("prompt", os.getcwd()), b"")
    except remote.Unreachable as exc:
        return f"test event: {exc}"
    if status in (200, 400):
        return SERVER_ANSWERS
    return f"test event: the server answered {status}"


def _json_state(harness: json_settings.Harness, scope: str) -> str:
    path = json_settings.settings_file(harness, scope)
    try:
        settings = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError):
        return f"{harness.name} ({scope}): {path} cannot be read as JSON"
    found = json_settings.installed_events(harness, settings)
    missing = sorted(name for name in harness.events.values() if name not in found)
    state = (
        "not installed" if not found else ("installed" if not missing else "missing " + ", ".join(missing))
    )
    return f"{harness.name} ({scope}): {state} in {path}"


def _test_event(args: argparse.Namespace) -> str:
    """Whether a session-start event reaches the store, and what it finds here."""
    from handrail.gate.hook_store import open_store  # lazy: a hook's start-up
    from handrail.runs import gate_store  # lazy: a hook's start-up

    try:
        store = open_store(args.database)
    except Exception as exc:
        return f"test event: the store cannot be opened ({' '.join(str(exc).split())[:200]})"
    if store is None:
        return "test event: no run store yet (no run was ever started with it)"
    try:
        run = gate_store.active_run(store, [os.getcwd()])
    except Exception as exc:
        return f"test event: the store cannot be read ({' '.join(str(exc).split())[:200]})"
    finally:
        store.close()
    if run is None:
        return "test event: reached the store; no active run holds this folder"
    return f"test event: reached the store; active run {run.id} ({run.workflow_id}) holds this folder"
