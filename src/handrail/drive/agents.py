"""The harnesses `handrail drive` starts, each in its own module: how one step's process
is started (its command line and what it adds to the environment) and what its output
says it spent. A harness's settings travel on its command line or in files under the
attempt's own scratch folder, never in the user's settings files."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from handrail.drive import claude_code, codex, gemini
from handrail.drive.usage import Usage


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one agent process is given."""

    program: str
    prompt: str
    server: Sequence[str]  # this handrail's MCP server: the program and its arguments
    server_env: Mapping[str, str]  # what the MCP server needs of the driver's environment
    hooks: Mapping[str, Any]  # the gate's hooks as this harness's settings shape them
    driven_from: int  # the run's accepted steps now, after which the gate lets it stop
    scratch: Path  # a folder of this attempt's own, removed after it
    env: Mapping[str, str]  # the driver's environment, as the process gets it
    resume: str | None = None  # --session per-run: the harness session to go on with
    workspace: str = "."  # the folder the process works in
    driven_run: str = ""  # the run `driven_from` counts: a branch its agent claims is held as any


Started = tuple[list[str], dict[str, str]]  # the command line, and what the environment adds


@dataclass(frozen=True, slots=True)
class Agent:
    name: str
    program: str  # looked up on PATH unless --agent-command names it
    start: Callable[[Attempt], Started]
    usage: Callable[[str], Usage]  # from the process's stdout


def _claude(a: Attempt) -> Started:
    started = claude_code.command(
        a.program, a.prompt, a.hooks, a.server, a.driven_from, resume=a.resume, driven_run=a.driven_run
    )
    return started, {}


AGENTS = {
    claude_code.NAME: Agent(claude_code.NAME, claude_code.PROGRAM, _claude, claude_code.usage),
    codex.NAME: Agent(
        codex.NAME,
        codex.PROGRAM,
        lambda a: codex.start(
            a.program,
            a.prompt,
            a.server,
            a.server_env,
            a.hooks,
            a.driven_from,
            a.workspace,
            a.resume,
            a.driven_run,
        ),
        codex.usage,
    ),
    gemini.NAME: Agent(
        gemini.NAME,
        gemini.PROGRAM,
        lambda a: gemini.start(
            a.program,
            a.prompt,
            a.server,
            a.hooks,
            a.driven_from,
            a.scratch,
            a.env,
            driven_run=a.driven_run,
            resume=a.resume,
        ),
        gemini.usage,
    ),
}
