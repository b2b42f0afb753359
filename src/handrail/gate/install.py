"""`handrail gate install|uninstall`: write the gate's hooks into a harness's
settings, and take them out again (`gate doctor`, which says what is installed, is
gate/doctor.py).

Claude Code: the `hooks` of `.claude/settings.json` (project) or
`~/.claude/settings.json` (user). The file is read as JSON and written back with
its key order, its indentation and its final newline; a file already written that
way keeps every byte outside handrail's entries (another layout is normalized, and
the command says so). A handrail entry is a command hook whose command runs
`handrail gate ... --harness claude-code`, or (with `--server URL`) an HTTP hook
posting to `URL/hooks/claude-code` with `--http-hooks`: every event but SessionStart,
which Claude Code runs only as a command (that one asks the server with `--server`).
Without `--http-hooks`, `--server` writes command hooks that ask the server: Claude Code
goes on when an HTTP hook cannot reach it, while the command refuses then where a run
was seen (spec/gate.md, "When the gate cannot judge").

git: a marked block in `pre-commit`, `commit-msg` and `pre-push` of the repository's
hooks folder (`git rev-parse --git-path hooks`, so `core.hooksPath` is honoured); an
existing hook keeps its own lines after the block.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from handrail.gate import json_settings, program
from handrail.gate.claude_code import EVENTS
from handrail.gate.claude_settings import HTTP_PATH, is_gate_handler
from handrail.gate.git_hooks import HOOKS, MARK_BEGIN, MARK_END

TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
COMMAND_ONLY = ("SessionStart",)  # Claude Code runs no HTTP hook for it
LOCAL_ONLY = ("ConfigChange",)  # read from the settings files where Claude Code runs: no --server
SHEBANG = "#!/bin/sh\n"


def manage(args: argparse.Namespace) -> int:
    """`gate install|uninstall HARNESS`."""
    harness = args.args[0] if args.args else args.harness
    if harness not in ("claude-code", "git", *json_settings.HARNESSES):
        names = ", ".join(("claude-code", "git", *json_settings.HARNESSES))
        print(f"handrail gate {args.event}: name the harness: {names}", file=sys.stderr)
        return 2
    try:
        if args.token:
            raise InstallError("--token is not written into hooks; set HANDRAIL_TOKEN where the harness runs")
        if args.server and args.database:
            raise InstallError("give --server or --database, not both: the hooks ask one of them")
        if getattr(args, "http_hooks", False) and not (args.server and harness == "claude-code"):
            raise InstallError("--http-hooks is for claude-code with --server: the hooks Claude Code posts")
        if harness in json_settings.HARNESSES:
            lines = _json_settings(args, json_settings.HARNESSES[harness], install=args.event == "install")
        elif harness == "git":
            lines = _git(args, install=args.event == "install")
        else:
            lines = _claude(args, install=args.event == "install")
    except (InstallError, json_settings.SettingsError) as exc:
        print(f"handrail gate {args.event}: {exc}", file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    return 0


class InstallError(Exception):
    pass


def _program() -> list[str]:
    """How the hooks call handrail: the program running now, by its full path (a
    harness's PATH rarely holds the venv), never a name looked up on PATH."""
    return program.words()


def _options(args: argparse.Namespace) -> list[str]:
    options: list[str] = []
    if args.server:
        options += ["--server", args.server]
    if args.database:
        options += ["--database", args.database]
    if args.require_run:
        options += ["--require-run", args.require_run]
    if args.on_error != "allow":
        options += ["--on-error", args.on_error]
    return options


# -- Claude Code --------------------------------------------------------------------
def settings_file(scope: str, cwd: Path | None = None) -> Path:
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    return (cwd or Path.cwd()) / ".claude" / "settings.json"


is_ours = is_gate_handler


def claude_entries(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Each Claude Code event with the matcher group handrail adds to it."""
    running = _program()
    entries: dict[str, dict[str, Any]] = {}
    for event, (name, _) in EVENTS.items():
        handler: dict[str, Any]
        if args.server and name in LOCAL_ONLY:
            continue
        if args.server and getattr(args, "http_hooks", False) and name not in COMMAND_ONLY:
            handler = http_hook(args)
        else:
            words = [*running, "gate", event, "--harness", "claude-code", *_options(args)]
            handler = {"type": "command", "command": shlex.join(words), "timeout": 30}
        group: dict[str, Any] = {"hooks": [handler]}
        if name in TOOL_EVENTS:
            group = {"matcher": "*", **group}
        entries[name] = group
    return entries


def http_hook(args: argparse.Namespace) -> dict[str, Any]:
    """An HTTP hook to the server: the command's options as query parameters, the token
    read from the environment Claude Code runs in (a settings file holds no secret)."""
    query: dict[str, str] = {}
    if args.require_run:
        query["require-run"] = args.require_run
    if args.on_error != "allow":
        query["on-error"] = args.on_error
    url = str(args.server).rstrip("/") + HTTP_PATH + (f"?{urlencode(query)}" if query else "")
    return {
        "type": "http",
        "url": url,
        "timeout": 30,
        "headers": {"Authorization": "Bearer $HANDRAIL_TOKEN"},
        "allowedEnvVars": ["HANDRAIL_TOKEN"],
    }


def _shown(handler: dict[str, Any]) -> str:
    return str(handler["url"] if handler.get("type") == "http" else handler.get("command"))


def _claude(args: argparse.Namespace, *, install: bool) -> list[str]:
    path = settings_file(args.scope)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        settings = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise InstallError(
            f"{path} is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    if not isinstance(settings, dict) or not isinstance(settings.get("hooks", {}), dict):
        raise InstallError(f"{path}: `hooks` must be an object")
    hooks: dict[str, Any] = settings.setdefault("hooks", {})
    changed: list[str] = []
    if install:
        for name, group in claude_entries(args).items():
            groups = hooks.setdefault(name, [])
            wanted = group["hooks"][0]
            found = [
                (g["hooks"], i)
                for g in groups
                if isinstance(g, dict) and isinstance(g.get("hooks"), list)
                for i, h in enumerate(g["hooks"])
                if is_ours(h)
            ]
            if found:
                handlers, index = found[0]
                if handlers[index] != wanted:  # other options, or command <-> HTTP: this install's
                    why = program.stale(str(handlers[index].get("command", "")))
                    handlers[index] = wanted
                    changed.append(f"replaced {name}: {_shown(wanted)}" + (f" ({why})" if why else ""))
                continue
            groups.append(group)
            changed.append(f"added {name}: {_shown(group['hooks'][0])}")
    else:
        for name in list(hooks):
            groups = hooks[name]
            if not isinstance(groups, list):
                continue
            for group in list(groups):
                if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                    continue
                ours = [h for h in group["hooks"] if is_ours(h)]
                if not ours:
                    continue
                group["hooks"] = [h for h in group["hooks"] if not is_ours(h)]
                changed.append(f"removed {name}: {_shown(ours[0])}")
                if not group["hooks"]:
                    groups.remove(group)
            if not groups:
                del hooks[name]
    if not hooks:
        del settings["hooks"]
    if not changed:
        return [f"{path}: nothing to change (handrail's hooks are {'already' if install else 'not'} there)"]
    new = _dump_like(settings, text)
    lines = [f"{path}:", *("  " + line for line in changed)]
    if text and _dump_like(json.loads(text), text) != text:
        lines.append("  (the file's layout was normalized: it was not written as JSON with one indent)")
    if args.dry_run:
        return [*lines, "  (dry run: nothing written)"]
    if not settings and not text:
        return lines
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".handrail-tmp")
    temporary.write_text(new, encoding="utf-8")
    os.replace(temporary, path)
    return lines


def _dump_like(value: Any, original: str) -> str:
    """`value` as JSON written the way `original` is: its indent, its final newline."""
    indent = 2
    for line in original.splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped and len(stripped) != len(line):
            indent = len(line) - len(stripped)
            break
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    return text + "\n" if (original.endswith("\n") or not original) else text


# -- Cursor, Gemini CLI, Codex ---------------------------------------------------------
def _json_settings(args: argparse.Namespace, harness: json_settings.Harness, *, install: bool) -> list[str]:
    running = _program()
    return json_settings.write(
        harness,
        json_settings.settings_file(harness, args.scope),
        lambda event: [*running, "gate", event, "--harness", harness.name, *_options(args)],
        install=install,
        dry_run=args.dry_run,
        dump_like=_dump_like,
    )


# -- git ----------------------------------------------------------------------------
def hooks_folder(cwd: Path | None = None) -> Path:
    done = subprocess.run(
        ["git", "rev-parse", "--git-path", "hooks"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise InstallError("not in a git repository (git rev-parse --git-path hooks failed)")
    return (cwd or Path.cwd()) / done.stdout.strip()


def git_block(hook: str, args: argparse.Namespace) -> str:
    # git's arguments right after the event: argparse takes no positionals after the options
    call = (
        shlex.join([*_program(), "gate", hook]) + ' "$@" ' + shlex.join(["--harness", "git", *_options(args)])
    )
    if hook == "reference-transaction":
        # only the `prepared` state can refuse; the refs on stdin kept for the lines after the block
        body = (
            'if [ "$1" = prepared ]; then\n'
            'handrail_refs=$(mktemp) && cat > "$handrail_refs" || exit 1\n'
            f'{call} < "$handrail_refs" '
            '|| { handrail_rc=$?; rm -f "$handrail_refs"; exit $handrail_rc; }\n'
            'exec < "$handrail_refs"; rm -f "$handrail_refs"\n'
            "fi\n"
        )
    elif hook != "pre-push":
        body = f"{call} || exit $?\n"
    else:
        # pre-push reads the refs on stdin: keep them for the lines after the block
        body = (
            'handrail_refs=$(mktemp) && cat > "$handrail_refs" || exit 1\n'
            f'{call} < "$handrail_refs" '
            '|| { handrail_rc=$?; rm -f "$handrail_refs"; exit $handrail_rc; }\n'
            'exec < "$handrail_refs"; rm -f "$handrail_refs"\n'
        )
    return f"{MARK_BEGIN}\n{body}{MARK_END}\n"


def _git(args: argparse.Namespace, *, install: bool) -> list[str]:
    folder = hooks_folder()
    changed: list[str] = []
    for hook in HOOKS:
        path = folder / hook
        text = path.read_text(encoding="utf-8") if path.exists() else None
        if install:
            block = git_block(hook, args)
            if text is not None and MARK_BEGIN in text:
                start, end = block_span(text)
                if text[start:end] == block:
                    continue
                # another program (an upgrade, a moved venv) or other options: this install's
                why = program.stale(block_command(text[start:end]) or "")
                new = text[:start] + block + text[end:]
                changed.append(f"replaced the gate in {path}" + (f" ({why})" if why else ""))
            elif text is None:
                new = SHEBANG + block
                changed.append(f"wrote {path}")
            else:
                first, _, rest = text.partition("\n")
                if not (first.startswith("#!") and ("sh" in first)):
                    raise InstallError(
                        f"{path} is not a shell script; add `{block.splitlines()[1]}` to it yourself"
                    )
                new = first + "\n" + block + rest
                changed.append(f"added the gate to {path} (its own lines run after it)")
        else:
            if text is None or MARK_BEGIN not in text:
                continue
            start, end = block_span(text)
            new = text[:start] + text[end:]
            if new == SHEBANG:
                if not args.dry_run:
                    path.unlink()
                changed.append(f"removed {path}")
                continue
            changed.append(f"removed the gate from {path}")
        if not args.dry_run:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(new, encoding="utf-8")
            path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    if not changed:
        return [f"{folder}: nothing to change (handrail's hooks are {'already' if install else 'not'} there)"]
    return changed + (["(dry run: nothing written)"] if args.dry_run else [])


def block_span(text: str) -> tuple[int, int]:
    """Where handrail's marked block is in a hook script, its final newline included."""
    start = text.index(MARK_BEGIN)
    end = text.find(MARK_END, start)
    end = len(text) if end < 0 else min(len(text), end + len(MARK_END) + 1)
    return start, end


def block_command(block: str) -> str | None:
    """The `handrail gate HOOK` line of a marked block, as far as its program and hook."""
    for line in block.splitlines():
        found = program.split(line)
        if found and found[1][:1] == ["gate"] and len(found[1]) >= 2:
            return shlex.join([*found[0], *found[1][:2]])
    return None
