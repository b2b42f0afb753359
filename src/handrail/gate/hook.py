"""The hook side of `handrail gate`: its options, and one event read, decided and
answered. Loaded by cli/gate.py, and directly by handrail.entry when the command is
a hook event, so that a hook (run on every tool call) loads neither the command
table nor any layer it does not use: the store, the policy and the harness adapter
load when used.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from handrail.gate import Answer  # lazy: a hook's start-up
    from handrail.runs.gate import Decision, GateEvent, Verdict  # lazy: a hook's start-up

HARNESSES = ("claude-code", "git")
CLAUDE_EVENTS = (
    "session-start",
    "user-prompt-submit",
    "pre-tool-use",
    "post-tool-use",
    "post-tool-use-failure",
    "stop",
    "subagent-stop",
)
GIT_HOOKS = ("pre-commit", "commit-msg", "pre-push")
MANAGE = ("install", "uninstall", "doctor")


HOOK_EVENTS = (*CLAUDE_EVENTS, *GIT_HOOKS)


def add_arguments(gate: argparse.ArgumentParser) -> None:
    gate.add_argument(
        "event",
        choices=[*CLAUDE_EVENTS, *GIT_HOOKS, *MANAGE],
        metavar="EVENT",
        help="the hook event ("
        + ", ".join((*CLAUDE_EVENTS, *GIT_HOOKS))
        + "), or install, uninstall, doctor",
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
        "--require-run",
        default=None,
        metavar="WORKFLOW",
        help="with no active run here, refuse edits and stopping until a run of WORKFLOW starts",
    )
    gate.add_argument(
        "--on-error",
        choices=["allow", "deny"],
        default="allow",
        help="when the run store cannot be read: let the action through with a warning (default), "
        "or refuse it",
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
        raise argparse.ArgumentTypeError(f"{text!r} is not a stop limit from 1 to 7")
    return value


def run_hook(args: argparse.Namespace) -> int:
    harness = args.harness or ("git" if args.event in GIT_HOOKS else "claude-code")
    if (harness == "git") != (args.event in GIT_HOOKS):
        print(f"handrail gate: {args.event} is not a {harness} hook event", file=sys.stderr)
        return 2
    answer = _hook(args, harness)
    if answer.stdout:
        sys.stdout.write(answer.stdout)
        sys.stdout.flush()
    if answer.stderr:
        sys.stderr.write(answer.stderr)
    return answer.exit_code


def _hook(args: argparse.Namespace, harness: str) -> Answer:
    from handrail.gate import HookInputError  # lazy: a hook's start-up

    data = sys.stdin.buffer.read((1 << 20) + 1) if not sys.stdin.isatty() else b""
    warnings: list[str] = []
    try:
        if harness == "git":
            from handrail.gate import git_hooks  # lazy: a hook's start-up

            event, warnings = git_hooks.read_input(args.event, args.args, data, os.getcwd())
        else:
            from handrail.gate import claude_code  # lazy: a hook's start-up

            event = claude_code.read_input(data, args.event)
    except HookInputError as exc:
        from handrail.gate import claude_code  # lazy: a hook's start-up

        return claude_code.malformed(str(exc))
    try:
        decision = _decide(args, event, harness)
    except Exception as exc:  # the store cannot be read: --on-error says what happens
        return _store_failed(args, harness, event, exc)
    if harness == "git":
        from handrail.gate import git_hooks  # lazy: a hook's start-up

        return git_hooks.answer(decision, warnings)
    from handrail.gate import claude_code  # lazy: a hook's start-up

    return claude_code.answer(args.event, decision)


def _decide(args: argparse.Namespace, event: GateEvent, harness: str) -> Decision:
    from handrail.runs.gate import Options, decide  # lazy: a hook's start-up

    options = Options(require_run=args.require_run, reminder=not args.no_reminder, stop_limit=args.stop_limit)
    store = _open_store(args.database)
    if store is None:
        return decide(None, event, options, _protected(args.database))
    from handrail.runs import gate_store  # lazy: a hook's start-up

    try:
        folders = [event.cwd]
        project = os.environ.get("CLAUDE_PROJECT_DIR")
        if harness == "claude-code" and project:
            folders.append(project)
        run = gate_store.active_run(store, folders)
        facts = gate_store.facts(store, run) if run is not None else None
        decision = decide(facts, event, options, _protected(args.database))
        if run is not None and decision.record is not None:
            gate_store.record(store, run, facts.step_id if facts else None, decision.record)
        return decision
    finally:
        store.close()


def _open_store(database: str | None) -> Any:
    """The run store, or None when its SQLite file does not exist (no run was ever
    started there, and the gate creates no database)."""
    from handrail.store.open import default_url, open_store  # lazy: a hook's start-up
    from handrail.store.urls import sqlite_path  # lazy: a hook's start-up

    url = database or default_url()
    if url.lower().startswith("sqlite:") and not sqlite_path(url).exists():
        return None
    return open_store(url)


def _protected(database: str | None) -> Any:
    from handrail.home import handrail_home  # lazy: a hook's start-up
    from handrail.runs.gate import Protected  # lazy: a hook's start-up

    paths = [str(handrail_home())]
    from handrail.store.open import default_url  # lazy: a hook's start-up
    from handrail.store.urls import sqlite_path  # lazy: a hook's start-up

    url = database or default_url()
    if url.lower().startswith("sqlite:"):
        with contextlib.suppress(Exception):  # a URL that names no file: nothing more to protect
            paths.append(str(sqlite_path(url)))
    from handrail.settings import Settings  # lazy: a hook's start-up

    paths.extend(path for _, path in Settings.from_environment().workflow_paths)
    return Protected(tuple(os.path.abspath(p) for p in paths), os.path.expanduser("~"))


def _store_failed(args: argparse.Namespace, harness: str, event: GateEvent, exc: Exception) -> Answer:
    reason = " ".join(str(exc).split())[:300] or type(exc).__name__
    refuse = args.on_error == "deny"
    text = f"handrail gate: cannot read the run store ({reason}); " + (
        "refusing (--on-error deny)" if refuse else "allowing"
    )
    if harness == "git":
        from handrail.gate import git_hooks  # lazy: a hook's start-up

        return git_hooks.warning(text, refuse)
    from handrail.gate import Answer, claude_code  # lazy: a hook's start-up
    from handrail.runs.gate import Decision  # lazy: a hook's start-up

    if not refuse:
        return claude_code.warning(args.event, text)
    verdict: Verdict = "block" if event.kind == "stop" else "deny"
    refused = claude_code.answer(
        args.event,
        Decision(
            verdict,
            "handrail: cannot read the run store; this is refused until it can be read (--on-error deny).",
        ),
    )
    return Answer(refused.stdout, text + "\n", refused.exit_code)
