"""The command line of a hook: its options, the harnesses and their event names, and
what each harness names beside them (its adapter module, the gate's kind of each of its
events, the project folder its run is also looked for in). Every hook loads it first,
so it loads nothing itself: an adapter loads when its harness is named.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse
    from typing import Any


HARNESSES = ("claude-code", "git", "cursor", "gemini", "codex")
CLAUDE_EVENTS = (
    "session-start",
    "user-prompt-submit",
    "pre-tool-use",
    "post-tool-use",
    "post-tool-use-failure",
    "stop",
    "subagent-stop",
    "config-change",
)
GIT_HOOKS = ("pre-commit", "commit-msg", "pre-push", "reference-transaction")
# the events of the other harnesses that Claude Code does not name alike (each
# adapter's EVENTS holds its own list; tests/gate holds these in step with them)
OTHER_EVENTS = (
    "before-agent",
    "before-tool",
    "after-tool",
    "after-agent",
    "before-shell-execution",
    "before-mcp-execution",
    "before-read-file",
    "pre-compress",
)
MANAGE = ("install", "uninstall", "doctor")


HOOK_EVENTS = (*CLAUDE_EVENTS, *GIT_HOOKS, *OTHER_EVENTS)


def add_arguments(gate: argparse.ArgumentParser) -> None:
    gate.add_argument(
        "event",
        choices=[*HOOK_EVENTS, *MANAGE],
        metavar="EVENT",
        help="the hook event (" + ", ".join(HOOK_EVENTS) + "), or install, uninstall, doctor",
    )
    gate.add_argument("args", nargs="*", metavar="ARG", help="git's hook arguments; for install: the harness")
    gate.add_argument("--harness", choices=HARNESSES, default=None, help="whose hook input this is")
    gate.add_argument(
        "--database",
        default=None,
        metavar="URL",
        help="the run store, as for `handrail serve` "
        "(default $HANDRAIL_DATABASE_URL, else ~/.handrail/handrail.db)",
    )
    gate.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="ask this `handrail serve` (e.g. http://127.0.0.1:8765) instead of opening the store",
    )
    gate.add_argument(
        "--token",
        default=None,
        metavar="TOKEN",
        help="with --server: the person's token (default $HANDRAIL_TOKEN)",
    )
    gate.add_argument(
        "--require-run",
        default=None,
        metavar="WORKFLOW",
        help="with no active run here, refuse edits and stopping until a run of WORKFLOW starts",
    )
    gate.add_argument(
        "--on-error",
        choices=["allow", "deny"],
        default="allow",
        help="when the gate cannot judge and no run is known to be active here: let the action "
        "through with a warning (default), or refuse it; with a run active it always refuses",
    )
    gate.add_argument(
        "--no-reminder", action="store_true", help="no reminder of the current step on each prompt"
    )
    gate.add_argument(
        "--stop-limit",
        type=_stop_limit,
        default=3,
        metavar="N",
        help="refuse a stop at most N times in a row per step (1 to 7, default 3)",
    )
    gate.add_argument(
        "--driven-from",
        type=int,
        default=None,
        metavar="N",
        help="a session `handrail drive` started for one step, when N steps were accepted: it may stop "
        "once the next one is",
    )
    gate.add_argument(
        "--driven-run",
        metavar="RUN",
        help="with --driven-from: the run it counts the steps of (a branch the session claims holds it "
        "as any session's)",
    )
    gate.add_argument(
        "--scope", choices=["project", "user"], default="project", help="install: which settings file"
    )
    gate.add_argument(
        "--dry-run", action="store_true", help="install, uninstall: say what would change, write nothing"
    )


def _stop_limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 7:  # Claude Code stops honouring stop hooks after 8 in a row
        import argparse  # lazy: only a wrong value needs it here

        raise argparse.ArgumentTypeError(f"{text!r} is not a stop limit from 1 to 7")
    return value


def adapter_of(harness: str) -> Any:
    """The adapter module of a harness with a JSON hook contract beside Claude Code's."""
    if harness == "cursor":
        from handrail.gate import cursor  # lazy: a hook's start-up

        return cursor
    if harness == "gemini":
        from handrail.gate import gemini  # lazy: a hook's start-up

        return gemini
    from handrail.gate import codex  # lazy: a hook's start-up

    return codex


def folders_of(harness: str, cwd: str) -> list[str]:
    """The folders a hook's run is looked for in: its working folder, then the project
    folder its harness names."""
    found = [cwd]
    variable = "CLAUDE_PROJECT_DIR" if harness == "claude-code" else None
    if harness not in ("git", "claude-code"):
        variable = adapter_of(harness).PROJECT_FOLDER
    project = os.environ.get(variable) if variable else None
    if project:
        found.append(project)
    return found


def kind_of(harness: str, event: str) -> Any:
    """The gate's kind of a hook event, as the command names it."""
    if harness == "git":
        return "before-tool"
    if harness == "claude-code":
        from handrail.gate import claude_code  # lazy: a hook's start-up

        return claude_code.EVENTS[event][1]
    return str(adapter_of(harness).EVENTS[event][1])
