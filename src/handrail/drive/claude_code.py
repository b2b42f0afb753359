"""Claude Code, headless: `claude -p PROMPT --output-format json`, with this handrail as
its MCP server and the gate's hooks given through its own per-invocation options
(`--mcp-config`, `--settings`, both as JSON text), so the user's settings files are
never written. Its one JSON result says what the process spent."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from handrail.drive.gemini import bound as bound_groups  # the one binding of hooks to a step
from handrail.drive.usage import Usage

__all__ = ["Usage", "bound", "command", "usage"]

NAME = "claude-code"
PROGRAM = "claude"


def command(
    program: str,
    prompt: str,
    hooks: Mapping[str, Any],
    server: Sequence[str],
    driven_from: int,
    name: str = "handrail",
    resume: str | None = None,
    driven_run: str = "",
) -> list[str]:
    """The command line of one step's process. `hooks`: the gate's Claude Code hooks
    (as `gate install` writes them); `server`: this handrail's MCP server command;
    `driven_from`: the run's accepted steps now, after which the gate lets it stop."""
    mcp = {"mcpServers": {name: {"command": server[0], "args": list(server[1:])}}}
    return [
        program,
        "-p",
        prompt,
        "--output-format",
        "json",
        "--settings",
        json.dumps({"hooks": bound(hooks, driven_from, driven_run)}),
        "--mcp-config",
        json.dumps(mcp),
        # a headless process cannot answer Claude Code's own permission prompts: the
        # gate's hooks hold it to the step instead
        "--permission-mode",
        "bypassPermissions",
        # --session per-run: the run's one session, its conversation carried from step to step
        *(["--resume", resume] if resume else []),
    ]


def bound(hooks: Mapping[str, Any], driven_from: int, driven_run: str = "") -> dict[str, Any]:
    """Claude Code's `hooks` setting (each event a list of matcher groups) from the gate's
    one group an event, each command given `--driven-from N` as Gemini CLI's are: the
    session is bound to its step. A stop before the step is accepted is refused once
    (`--stop-limit 1`): the driver, not the gate, tries again."""
    return bound_groups({event: [group] for event, group in hooks.items()}, driven_from, driven_run)


def usage(stdout: str) -> Usage:
    """The usage of Claude Code's JSON result (the last JSON object it printed), or an
    empty, unreported one when there is none."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            found = json.loads(line)
        except ValueError:
            continue
        if isinstance(found, dict) and found.get("type") == "result":
            return _of(found)
    return Usage()


def _of(result: Mapping[str, Any]) -> Usage:
    tokens = result.get("usage") if isinstance(result.get("usage"), dict) else {}
    assert isinstance(tokens, dict)

    def count(key: str) -> int:
        value = tokens.get(key)
        return value if isinstance(value, int) and value >= 0 else 0

    cost = result.get("total_cost_usd")
    turns = result.get("num_turns")
    session = result.get("session_id")
    return Usage(
        input_tokens=count("input_tokens"),
        output_tokens=count("output_tokens"),
        cache_read_tokens=count("cache_read_input_tokens"),
        cache_creation_tokens=count("cache_creation_input_tokens"),
        cost_usd=float(cost) if isinstance(cost, (int, float)) and cost >= 0 else 0.0,
        turns=turns if isinstance(turns, int) else 0,
        session=session if isinstance(session, str) else None,
        reported=True,
    )
