"""The gate's hooks in the JSON settings files of Cursor, Gemini CLI and Codex: which
file, which events, the entry handrail adds to each, and the merge that adds them or
takes them out while every other entry stays as it was.

- Cursor: `.cursor/hooks.json` (project) or `~/.cursor/hooks.json` (user),
  `{"version": 1, "hooks": {"preToolUse": [{"command": ...}]}}`: handlers sit
  directly under the event.
- Gemini CLI: the `hooks` of `.gemini/settings.json` or `~/.gemini/settings.json`,
  `{"BeforeTool": [{"hooks": [{"type": "command", "command": ..., "timeout": MS}]}]}`
  (its timeout is in milliseconds).
- Codex: `.codex/hooks.json` or `~/.codex/hooks.json`, shaped as Claude Code's hooks
  (its timeout in seconds). Codex runs a project's or a changed hook only once a
  person trusts it in `/hooks`.

A handrail entry is a handler whose command runs `handrail gate ... --harness H`
(handrail named by its path, or as `PYTHON -m handrail`).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from handrail.gate import codex, cursor, gemini, program


class SettingsError(Exception):
    pass


class Harness(NamedTuple):
    name: str
    file: str  # relative to the project, or to the home folder for --scope user
    events: Mapping[str, str]  # the command's event -> the harness's event name
    flat: bool  # Cursor: handlers directly under the event, not in matcher groups
    new_file: Mapping[str, Any]  # the keys a file handrail creates starts with
    handler: Callable[[str], dict[str, Any]]


def _installed(events: Mapping[str, tuple[str, Any]], names: tuple[str, ...]) -> dict[str, str]:
    return {event: events[event][0] for event in names}


HARNESSES = {
    "cursor": Harness(
        "cursor",
        ".cursor/hooks.json",
        # preToolUse sees the shell and file tools; MCP tools are checked where Cursor names their server
        _installed(
            cursor.EVENTS,
            (
                "session-start",
                "pre-tool-use",
                "post-tool-use",
                "post-tool-use-failure",
                "before-mcp-execution",
                "stop",
            ),
        ),
        True,
        {"version": 1},
        lambda command: {"command": command},
    ),
    "gemini": Harness(
        "gemini",
        ".gemini/settings.json",
        _installed(gemini.EVENTS, tuple(gemini.EVENTS)),
        False,
        {},
        lambda command: {"type": "command", "name": "handrail-gate", "command": command, "timeout": 30000},
    ),
    "codex": Harness(
        "codex",
        ".codex/hooks.json",
        _installed(codex.EVENTS, tuple(codex.EVENTS)),
        False,
        {},
        lambda command: {"type": "command", "command": command, "timeout": 30},
    ),
}


def settings_file(harness: Harness, scope: str, cwd: Path | None = None) -> Path:
    return (Path.home() if scope == "user" else (cwd or Path.cwd())) / harness.file


def is_ours(handler: Any, harness: str) -> bool:
    return (
        isinstance(handler, dict)
        and handler.get("type", "command") == "command"
        and runs_the_gate(handler.get("command", ""), harness)
    )


def runs_the_gate(command: Any, harness: str) -> bool:
    """Whether a hook's command line is `handrail gate` for `harness`."""
    found = program.split(str(command))
    return found is not None and found[1][:1] == ["gate"] and harness in found[1]


def _handlers(harness: Harness, entries: Any) -> list[Any]:
    """Every handler of one event's list, whether flat or in matcher groups."""
    if not isinstance(entries, list):
        return []
    if harness.flat:
        return entries
    return [
        h for g in entries if isinstance(g, dict) and isinstance(g.get("hooks"), list) for h in g["hooks"]
    ]


def installed_events(harness: Harness, settings: Any) -> list[str]:
    hooks = settings.get("hooks", {}) if isinstance(settings, dict) else {}
    if not isinstance(hooks, dict):
        return []
    return sorted(
        name
        for name in harness.events.values()
        if any(is_ours(h, harness.name) for h in _handlers(harness, hooks.get(name)))
    )


def installed_commands(harness: Harness, settings: Any) -> list[tuple[str, str]]:
    """Each event's handrail command line, as (the harness's event name, the command)."""
    hooks = settings.get("hooks", {}) if isinstance(settings, dict) else {}
    if not isinstance(hooks, dict):
        return []
    return [
        (name, str(h["command"]))
        for name in harness.events.values()
        for h in _handlers(harness, hooks.get(name))
        if is_ours(h, harness.name)
    ]


def merge(
    harness: Harness, settings: dict[str, Any], words: Callable[[str], list[str]], install: bool
) -> list[str]:
    """Add handrail's entries to `settings` or take them out; what changed, one line each.
    `words` gives the hook's command line for a command event."""
    if not isinstance(settings.get("hooks", {}), dict):
        raise SettingsError("`hooks` must be an object")
    hooks: dict[str, Any] = settings.setdefault("hooks", {})
    changed: list[str] = []
    for event, name in harness.events.items():
        entries = hooks.get(name)
        if entries is not None and not isinstance(entries, list):
            raise SettingsError(f"`hooks.{name}` must be a list")
        ours = [h for h in _handlers(harness, entries) if is_ours(h, harness.name)]
        if install:
            handler = harness.handler(shlex.join(words(event)))
            if ours and ours[0].get("command") == handler["command"]:
                continue
            if ours:  # another program or other options: this install's, in the same place
                why = program.stale(str(ours[0].get("command", "")))
                ours[0].clear()
                ours[0].update(handler)
                changed.append(f"replaced {name}: {handler['command']}" + (f" ({why})" if why else ""))
                continue
            hooks.setdefault(name, []).append(handler if harness.flat else {"hooks": [handler]})
            changed.append(f"added {name}: {handler['command']}")
            continue
        if not ours or entries is None:
            continue
        changed.append(f"removed {name}: {ours[0]['command']}")
        if harness.flat:
            entries[:] = [h for h in entries if not is_ours(h, harness.name)]
        else:
            for group in list(entries):
                if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                    kept = [h for h in group["hooks"] if not is_ours(h, harness.name)]
                    if len(kept) != len(group["hooks"]):
                        group["hooks"] = kept
                        if not kept:
                            entries.remove(group)
        if not entries:
            del hooks[name]
    if not hooks:
        del settings["hooks"]
    return changed


def write(
    harness: Harness,
    path: Path,
    words: Callable[[str], list[str]],
    *,
    install: bool,
    dry_run: bool,
    dump_like: Callable[[Any, str], str],
) -> list[str]:
    """Install or uninstall in the settings file at `path`; the lines to print."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        settings = json.loads(text) if text.strip() else dict(harness.new_file)
    except json.JSONDecodeError as exc:
        raise SettingsError(
            f"{path} is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    if not isinstance(settings, dict):
        raise SettingsError(f"{path} is not a JSON object")
    try:
        changed = merge(harness, settings, words, install)
    except SettingsError as exc:
        raise SettingsError(f"{path}: {exc}") from None
    if not changed:
        return [f"{path}: nothing to change (handrail's hooks are {'already' if install else 'not'} there)"]
    lines = [f"{path}:", *("  " + line for line in changed)]
    if text and dump_like(json.loads(text), text) != text:
        lines.append("  (the file's layout was normalized: it was not written as JSON with one indent)")
    if dry_run:
        return [*lines, "  (dry run: nothing written)"]
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".handrail-tmp")
    temporary.write_text(dump_like(settings, text), encoding="utf-8")
    os.replace(temporary, path)
    return lines
