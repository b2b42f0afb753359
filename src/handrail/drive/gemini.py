"""Gemini CLI, headless: `gemini -p PROMPT --output-format json --yolo`. This handrail as
its MCP server and the gate's hooks go into a Gemini CLI home of the attempt's own
(`GEMINI_CLI_HOME`), layered over the user's: its `.gemini/settings.json` is the user's
settings with handrail's added, and every other entry of the user's `.gemini` (the
login, the trusted folders, the extensions, the sessions) is linked in as it is. The
user's files are read, never written. (A system settings file, Gemini CLI's other
per-invocation layer, is read only when root owns it and every folder above it, which
a driver started by its user cannot make.) Its one JSON result's `stats` say what the
process spent, per model; Gemini CLI reports no price."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from handrail.drive.usage import Usage, count
from handrail.model.errors import HandrailError

NAME = "gemini"
PROGRAM = "gemini"
HOME = "GEMINI_CLI_HOME"


def start(
    program: str,
    prompt: str,
    server: Sequence[str],
    hooks: Mapping[str, Any],
    driven_from: int,
    scratch: Path,
    env: Mapping[str, str],
    name: str = "handrail",
    driven_run: str = "",
    resume: str | None = None,
) -> tuple[list[str], dict[str, str]]:
    """The command line, and the environment naming the attempt's Gemini CLI home.
    `resume` (--session per-run): the session to go on with. Gemini CLI keeps its
    sessions in its home's `tmp` folder, which is linked in as the person's own (made if
    missing, as Gemini CLI makes it on a first run), so a session outlives the attempt's
    home, as it does when the person runs Gemini CLI."""
    users = Path(env.get(HOME) or env.get("HOME") or Path.home()) / ".gemini"
    with contextlib.suppress(OSError):  # a home it cannot write: the sessions stay the attempt's
        (users / "tmp").mkdir(parents=True, exist_ok=True)
    settings = _user_settings(users / "settings.json")
    settings["mcpServers"] = {
        **_dict(settings.get("mcpServers")),
        name: {"command": server[0], "args": list(server[1:])},
    }
    settings["hooks"] = {**_dict(settings.get("hooks")), **bound(hooks, driven_from, driven_run)}
    home = scratch / "gemini-home"
    (home / ".gemini").mkdir(parents=True)
    if users.is_dir():
        for entry in users.iterdir():
            if entry.name != "settings.json":
                os.symlink(entry, home / ".gemini" / entry.name)
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    # --yolo: a headless process cannot answer Gemini CLI's own confirmations
    argv = [program, "-p", prompt, "--output-format", "json", "--yolo"]
    return argv + (["--resume", resume] if resume else []), {HOME: str(home)}


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _user_settings(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise HandrailError(f"cannot read Gemini CLI's settings {path}: {exc.strerror}") from exc
    try:
        found = json.loads(text) if text.strip() else {}
    except ValueError as exc:  # JSON with comments: not layered over, rather than read wrong
        raise HandrailError(f"Gemini CLI's settings {path} are not plain JSON: {exc}") from exc
    if not isinstance(found, dict):
        raise HandrailError(f"Gemini CLI's settings {path} are not a JSON object")
    return found


def bound(hooks: Mapping[str, Any], driven_from: int, driven_run: str = "") -> dict[str, Any]:
    """Gemini CLI's `hooks` (each event a list of groups), `--driven-from N --stop-limit 1`
    on each handrail command: the session is bound to its step, as Claude Code's is."""
    run = ["--driven-run", driven_run] if driven_run else []
    given = shlex.join(["--driven-from", str(driven_from), *run, "--stop-limit", "1"])

    def handler(h: Any) -> Any:
        if isinstance(h, dict) and h.get("type") == "command":
            return {**h, "command": f"{h['command']} {given}"}
        return h

    return {
        event: [{**g, "hooks": [handler(h) for h in g.get("hooks", [])]} for g in groups]
        for event, groups in hooks.items()
    }


def usage(stdout: str) -> Usage:
    """The token counts of every model the JSON result's stats name; unreported when
    there is no result (killed, crashed)."""
    result = _result(stdout)
    if result is None:
        return Usage()
    stats = _dict(result.get("stats"))
    models = _dict(stats.get("models"))
    totals = {"prompt": 0, "candidates": 0, "cached": 0, "requests": 0}
    for model in models.values():
        tokens = _dict(_dict(model).get("tokens"))
        for key in ("prompt", "candidates", "cached"):
            totals[key] += count(tokens.get(key))
        totals["requests"] += count(_dict(_dict(model).get("api")).get("totalRequests"))
    session = result.get("session_id")
    return Usage(
        # Gemini counts the cached part inside the prompt: the input here is what was not cached
        input_tokens=max(totals["prompt"] - totals["cached"], 0),
        output_tokens=totals["candidates"],
        cache_read_tokens=totals["cached"],
        turns=totals["requests"],
        session=session if isinstance(session, str) else None,
        reported=True,
    )


def _result(stdout: str) -> dict[str, Any] | None:
    """The one JSON object Gemini CLI prints; lines before it (warnings) are skipped."""
    lines = stdout.strip().splitlines()
    for at, line in enumerate(lines):
        if not line.startswith("{"):
            continue
        try:
            found = json.loads("\n".join(lines[at:]))
        except ValueError:
            continue
        return found if isinstance(found, dict) else None
    return None
