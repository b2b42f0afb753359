"""The `handrail` command: its parser and the table of commands. Each group of
commands lives in a module of its own: `serve` (start, serve, dashboard), `catalog`
(check, list, sources, graph, walk), `setup` (init, token), `runs` (runs), `stats`, ...;
`options` holds the options they share. A command's module loads only when it runs:
`handrail start` answers `initialize` without the modules of the others."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import Any, NamedTuple, NoReturn

from handrail.cli.options import EXIT_ERRORS, EXIT_OK, EXIT_USAGE
from handrail.internals import WideSubcommandHelp, WidthWhenWritten, described_subcommands, subcommands
from handrail.model.version import __version__

__all__ = ["COMMANDS", "EXIT_ERRORS", "EXIT_OK", "EXIT_USAGE", "Command", "build_parser", "main"]


# wide, else `dashboard` loses its line; the terminal asked only for help written
class _Formatter(WideSubcommandHelp, WidthWhenWritten, argparse.HelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=30)


class _Parser(argparse.ArgumentParser):
    """A usage mistake is one line naming it and where the options are, not the whole
    usage (`handrail serve`'s is twenty lines, and the error came last)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # options as long as `--max-completed-steps N` keep their help on their own line
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def add_subparsers(self, **kwargs: Any) -> Any:
        # each command's --help opens with what it does: its line of the command list
        kwargs.setdefault("action", described_subcommands())
        return super().add_subparsers(**kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


class Command(NamedTuple):
    """One command of the table: the module under handrail.cli that holds it, the names
    there of the function that adds its options to its parser and of the one that runs
    it, its line in `handrail --help`, and the note closing its own --help."""

    module: str
    add: str
    run: str
    help: str
    epilog: str | None = None


CHECK_EXITS = "Exit status: 0 no errors (warnings allowed), 1 errors, 2 a path not found or a usage mistake."
LIST_EXITS = (
    "Exit status: 0; 1 when a workflow file is broken; 2 when a --workflows path does not exist "
    "(as `check` exits 2 for a path not found; the listing is printed all the same)."
)
DASHBOARD_NOTE = (
    "It also takes the limits and transport options of `handrail serve` (see `handrail serve --help`)."
)

# In the order `handrail --help` lists them. A command's module is imported only when that
# command is given (or for its --help, or the completion script, which needs them all).
COMMANDS: dict[str, Command] = {
    "start": Command("serve", "add_start", "start", "serve the workflows over stdio (for MCP clients)"),
    "serve": Command(
        "serve", "add_serve", "serve_command", "serve the workflows over Streamable HTTP at /mcp"
    ),
    # the same server on loopback, for one person's local store
    "dashboard": Command(
        "serve",
        "add_dashboard",
        "serve_command",
        "watch and approve this machine's runs in a browser",
        DASHBOARD_NOTE,
    ),
    "check": Command("catalog", "add_check", "check", "report every problem in workflow files", CHECK_EXITS),
    "list": Command(
        "catalog", "add_list", "list_command", "the workflows in service, and broken files", LIST_EXITS
    ),
    "sources": Command("catalog", "add_sources", "sources", "where workflows come from, in precedence order"),
    "init": Command(
        "setup",
        "add_init",
        "init",
        "create ~/.handrail/workflows (or $HANDRAIL_HOME/workflows) with a sample workflow",
    ),
    "graph": Command(
        "catalog", "add_graph", "graph", "draw a workflow's step graph (Mermaid or Graphviz dot)"
    ),
    "walk": Command(
        "catalog", "add_walk", "walk_command", "play a workflow in the terminal, as an agent would"
    ),
    "runs": Command(
        "runs",
        "add_runs",
        "runs_command",
        "list, show, approve, decline, abandon, verify, export and migrate workflow runs",
    ),
    "token": Command("setup", "add_token", "token", "make a new random token and its tokens-file line"),
    "key": Command(
        "record", "add_key", "key_command", "make the Ed25519 key that signs exported run records"
    ),
    "stats": Command(
        "stats",
        "add_stats",
        "stats_command",
        "what the runs of each workflow tell: funnel, rejections, checks",
    ),
    "audit": Command(
        "audit",
        "add_audit",
        "audit_command",
        "every run event as a JSON line: who, what, run, step, from where",
    ),
    "notify": Command(
        "notify", "add_notify", "notify_command", "send a sample notification to a webhook receiver"
    ),
    "gate": Command(
        "gate",
        "add_gate",
        "gate_command",
        "hold an agent's harness to the run: hooks for Claude Code, Gemini CLI, Codex, Cursor and git",
    ),
    "person": Command(
        "person",
        "add_person",
        "person_command",
        "a person's passkeys, which approvals the agent could reach need",
    ),
    "drive": Command(
        "drive", "add_drive", "drive_command", "run a workflow from start to end with headless agents"
    ),
    "completion": Command("completion", "add_completion", "run", "a completion script for bash, zsh or fish"),
}


def _function(command: Command, name: str) -> Callable[..., Any]:
    found: Callable[..., Any] = getattr(import_module(f"handrail.cli.{command.module}"), name)
    return found


def build_parser(only: str | None = None, *, others: bool = True) -> argparse.ArgumentParser:
    """The whole command line's parser; with `only`, every command is listed but only
    that one's options are added (and its module loaded): what parsing it needs.
    `others=False`: the other commands are not even listed (a parser each is most of the
    time a server takes to start): for a command line whose first word is `only`, which
    the top level's --help never sees."""
    parser = _Parser(prog="handrail", description="Step-by-step workflows for AI agents, over MCP.")
    parser.add_argument("-V", "--version", action="version", version=f"handrail {__version__}")
    # the prog the commands' usage opens with, as argparse would write it (no positional
    # comes before the command): else it writes a usage for it, asking the terminal's width
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", prog=parser.prog)
    for name, command in COMMANDS.items():
        if not others and name != only:
            continue
        made = sub.add_parser(name, help=command.help, epilog=command.epilog)
        if only is None or only == name:
            _function(command, command.add)(made)
    return parser


def _chosen(argv: Sequence[str]) -> str | None:
    """The command `argv` names: its first word that is not an option (the top level's
    options, -h and -V, take no value), if the table has it."""
    word = next((arg for arg in argv if not arg.startswith("-")), None)
    return word if word in COMMANDS else None


def _innermost(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command `args` were parsed for: `handrail runs list`'s."""
    for dest, name, chosen, _ in subcommands(parser):
        if getattr(args, dest, None) == name:
            return _innermost(chosen, args)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else list(argv)
    chosen = _chosen(given)
    # the command first: no top-level option (-h, -V) comes before it to list the others
    parser = build_parser(only=chosen or "", others=not given or given[0] != chosen)
    try:
        args, unknown = parser.parse_known_args(given)
        if unknown:  # named by the command they were given to, which lists its options
            _innermost(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as exc:
        return int(exc.code or 0) if exc.code in (0, None) else EXIT_USAGE
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    command = COMMANDS[args.command]
    try:
        code: int = _function(command, command.run)(args)
    except BrokenPipeError:  # `handrail check ... | head`: the reader left; no traceback
        import os  # lazy: loaded when the command runs

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    return code
