"""`handrail drive`: a workflow run from start to end by headless agents (docs/drive.md).
This module reads the command line, builds the service the driver reads and writes the
run through, and names the MCP server and the gate hooks each agent process gets: the
same store, the same workflow sources and check settings as the driver's own."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from handrail.cli import notify_options, options, serving
from handrail.cli.options import EXIT_USAGE

AGENTS = ("claude-code", "codex", "gemini")  # the names of drive.agents.AGENTS
PROGRAMS = {
    "claude-code": ("claude", "Claude Code"),
    "codex": ("codex", "Codex"),
    "gemini": ("gemini", "Gemini CLI"),
}
NOT_PASSED = ("HANDRAIL_TOKEN",)  # a person's token would let the agent's shell act as them


def add_drive(drive: argparse.ArgumentParser) -> None:
    drive.add_argument("workflow", nargs="?", metavar="WORKFLOW", help="the workflow to start a run of")
    drive.add_argument("--resume", metavar="RUN", help="go on with this run instead of starting one")
    drive.add_argument(
        "--agent", choices=AGENTS, default="claude-code", help="the harness (default claude-code)"
    )
    drive.add_argument(
        "--agent-command", metavar="PATH", help="the harness's program (default: found on PATH)"
    )
    drive.add_argument("--goal", default="", help="the run's goal (an issue's text, a task)")
    drive.add_argument(
        "--context", action="append", default=[], metavar="KEY=VALUE", help="a context value (repeatable)"
    )
    drive.add_argument("--workspace", metavar="DIR", help="the folder the agents work in (default: here)")
    drive.add_argument(
        "--attempts", type=options.positive_int, default=3, metavar="N", help="tries per step (default 3)"
    )
    drive.add_argument(
        "--agents",
        type=options.positive_int,
        default=1,
        metavar="N",
        help="at a parallel loop, N agents at once, each on a branch it claims, in its own worktree",
    )
    drive.add_argument(
        "--session",
        choices=("per-step", "per-run"),
        default="per-step",
        help="per-step (default): a fresh harness session each step; per-run: each step goes on with "
        "the run's one session (the harness's own resume)",
    )
    drive.add_argument("--max-usd", type=_non_negative, metavar="X", help="stop once the run has cost more")
    drive.add_argument("--max-minutes", type=_non_negative, metavar="M", help="stop after this long")
    drive.add_argument(
        "--price",
        type=_price,
        metavar="IN,OUT[,CACHED]",
        help="dollars per million input, output and cached input tokens, for a harness that reports "
        "tokens without a price (Codex, Gemini CLI), so that cost and --max-usd count them",
    )
    drive.add_argument("--no-wait", action="store_true", help="exit 3 when a step waits for a person")
    drive.add_argument(
        "--report", metavar="FILE", help="a Markdown summary, or JUnit XML if FILE ends in .xml"
    )
    drive.add_argument("--json", action="store_true", help="one JSON object on stdout at the end")
    options.add_source_options(drive)
    options.add_check_options(drive)
    options.add_run_options(drive)
    notify_options.add_notify_options(drive)


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of 0 or more")
    return value


def _price(text: str) -> Any:
    from handrail.drive.usage import price_of  # lazy: the driver loads with its command

    try:
        return price_of(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _usage(message: str) -> int:
    print(f"handrail drive: {message} (see `handrail drive --help`)", file=sys.stderr)
    return EXIT_USAGE


def _context(pairs: list[str]) -> dict[str, Any] | str:
    """KEY=VALUE pairs; a VALUE that reads as JSON is that value, else the text."""
    found: dict[str, Any] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            return f"--context {pair!r} is not KEY=VALUE"
        try:
            found[key] = json.loads(value)
        except ValueError:
            found[key] = value
    return found


def _server_args(args: argparse.Namespace, database: str) -> list[str]:
    """The options of `handrail start` that make the agent's MCP server the driver's twin."""
    given = ["start", "--database", database]
    for path in args.workflows:
        given += ["--workflows", path]
    if args.no_bundled:
        given.append("--no-bundled")
    if args.allow_commands:
        given.append("--allow-commands")
    for command in args.commands:
        given += ["--command", command]
    if args.approval_channels:
        given += ["--approval-channels", ",".join(sorted(args.approval_channels))]
    if args.require_presence:
        given.append("--require-presence")
    if args.lease_seconds is not None:
        given += ["--lease-seconds", repr(args.lease_seconds)]
    # the agent's server queues the notifications its writes cause (a step waiting for a
    # person), as `handrail serve` would; the driver's own worker delivers them
    for receiver in args.notify:
        given += ["--notify", receiver]
    if args.public_url:
        given += ["--public-url", args.public_url]
    return given


def _hooks(agent: str, database: str) -> dict[str, Any]:
    """The gate's hooks for the store, as the agent's settings shape them."""
    from handrail.gate import json_settings, program  # lazy: loaded when the command runs
    from handrail.gate.install import claude_entries  # lazy: as json_settings

    if agent == "claude-code":
        given = argparse.Namespace(server=None, database=database, require_run=None, on_error="allow")
        return claude_entries(given)
    settings: dict[str, Any] = {}
    words = [*program.words(), "gate"]
    json_settings.merge(  # Gemini CLI's and Codex's hooks: the same shape
        json_settings.HARNESSES[agent],
        settings,
        lambda event: [*words, event, "--harness", agent, "--database", database],
        True,
    )
    hooks: dict[str, Any] = settings["hooks"]
    return hooks


def drive_command(args: argparse.Namespace) -> int:
    from handrail.drive.driver import Driver, Plan  # lazy: loaded when the command runs
    from handrail.drive.live import watcher  # lazy: as Driver
    from handrail.drive.report import as_json, junit, markdown  # lazy: as Driver
    from handrail.gate import program  # lazy: as Driver
    from handrail.store.open import default_url  # lazy: as Driver

    if (args.workflow is None) == (args.resume is None):
        return _usage("give a WORKFLOW to start, or --resume RUN, not both")
    context = _context(args.context)
    if isinstance(context, str):
        return _usage(context)
    found, named = PROGRAMS[args.agent]
    harness = args.agent_command or shutil.which(found)
    if not harness:
        return _usage(f"{named}'s `{found}` is not on PATH: install it, or name it with --agent-command")
    workspace = os.path.abspath(args.workspace or os.getcwd())
    if not os.path.isdir(workspace):
        return _usage(f"--workspace {workspace!r} is not a folder")
    args = argparse.Namespace(**{**vars(args), "database": args.database or default_url()})
    checks = options.check_config_of(args, "drive")
    if checks is None:
        return EXIT_USAGE
    options.warn_missing(args)
    catalog = options.catalog_of(args)
    env = {k: v for k, v in os.environ.items() if k not in NOT_PASSED}
    if args.notify_secret:  # the agents' servers sign what they deliver as the driver does
        from handrail.settings import NOTIFY_SECRET  # lazy: as Driver

        env[NOTIFY_SECRET] = args.notify_secret
    plan = Plan(
        workspace=workspace,
        program=harness,
        server=(*program.words(), *_server_args(args, args.database)),
        hooks=_hooks(args.agent, args.database),
        env=env,
        agent=args.agent,
        server_env={k: v for k, v in env.items() if k.startswith("HANDRAIL_")},
        workflow=args.workflow,
        resume=args.resume,
        goal=args.goal,
        context=context,
        attempts=args.attempts,
        max_usd=args.max_usd,
        max_minutes=args.max_minutes,
        wait=not args.no_wait,
        agents=args.agents,
        session=args.session,
        price=args.price,
    )
    shown = watcher(sys.stderr.isatty, args.attempts)
    try:
        served = serving.service_of(catalog, args, checks, notifying=notify_options.config_of(args))
        with serving.background(served):
            outcome = Driver(served.service, plan, shown.say, shown).drive()
    finally:
        shown.close()
        catalog.close()
    summary = markdown(outcome)
    if args.report:
        Path(args.report).write_text(junit(outcome) if args.report.endswith(".xml") else summary, "utf-8")
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as out:
            out.write(summary)
    if args.json:
        print(json.dumps(as_json(outcome)))
    else:
        print(f"{outcome.status}: {outcome.reason} (run {outcome.run_id}, ${outcome.cost_usd:.4f})")
    return outcome.exit_code
