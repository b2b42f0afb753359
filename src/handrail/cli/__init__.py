"""The `handrail` command: its parser and the table of commands. Each group of
commands lives in a module of its own: `serve` (start, serve, dashboard), `catalog`
(check, list, sources, graph, walk), `setup` (init, token), `runs` (runs), `stats`; `options`
holds the options they share."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from handrail import __version__
from handrail.cli import catalog, notify, serve, setup, stats
from handrail.cli.options import EXIT_ERRORS, EXIT_OK, EXIT_USAGE

__all__ = ["EXIT_ERRORS", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=30)

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction):
            # argparse measures the commands one indent short, so `dashboard` lost its line
            longest = max(map(len, action.choices), default=0)
            self._action_max_length = max(self._action_max_length, longest + self._current_indent + 2)


class _Parser(argparse.ArgumentParser):
    """A usage mistake is one line naming it and where the options are, not the whole
    usage (`handrail serve`'s is twenty lines, and the error came last)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # options as long as `--max-completed-steps N` keep their help on their own line
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def _describe(parser: argparse.ArgumentParser) -> None:
    """Each command's --help opens with what it does: its line of the command list."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                command = action.choices[choice.dest]
                if command.description is None and choice.help:
                    command.description = choice.help[0].upper() + choice.help[1:] + "."
                _describe(command)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="handrail", description="Step-by-step workflows for AI agents, over MCP.")
    parser.add_argument("-V", "--version", action="version", version=f"handrail {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve.add_start(sub)
    serve.add_serve(sub)
    serve.add_dashboard(sub)
    catalog.add_check(sub)
    catalog.add_list(sub)
    catalog.add_sources(sub)
    setup.add_init(sub)
    catalog.add_graph(sub)
    catalog.add_walk(sub)
    from handrail.cli.runs import add_runs_parser  # lazy: loaded when the command runs

    verbs = add_runs_parser(sub)
    from handrail.cli.migrate import add_migrate_verb  # as add_runs_parser

    add_migrate_verb(verbs)
    setup.add_token(sub)
    from handrail.cli.record import add_key  # as runs: its verbs load more only when run

    add_key(sub)
    stats.add_stats(sub)
    from handrail.cli.audit import add_audit  # lazy: as add_key

    add_audit(sub)
    notify.add_notify_parser(sub)
    from handrail.cli.gate import add_gate  # lazy: loaded when the command runs

    add_gate(sub)
    from handrail.cli.person import add_person  # lazy: as add_gate

    add_person(sub)
    completion = sub.add_parser("completion", help="a completion script for bash, zsh or fish")
    completion.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell it is for")
    _describe(parser)
    return parser


def _gate(args: argparse.Namespace) -> int:
    from handrail.cli.gate import gate_command  # lazy: loaded when the command runs

    return gate_command(args)


def _key(args: argparse.Namespace) -> int:
    from handrail.cli.record import key_command  # as _runs

    return key_command(args)


def _audit(args: argparse.Namespace) -> int:
    from handrail.cli.audit import audit_command  # as _runs

    return audit_command(args)


def _person(args: argparse.Namespace) -> int:
    from handrail.cli.person import person_command  # as _runs

    return person_command(args)


def _runs(args: argparse.Namespace) -> int:
    from handrail.cli.runs import runs_command  # lazy: loaded when the command runs

    return runs_command(args)


def _completion(args: argparse.Namespace) -> int:
    from handrail.cli.completion import script  # lazy: loaded when the command runs

    sys.stdout.write(script(build_parser(), args.shell))
    return EXIT_OK


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "start": serve.start,
    "serve": serve.serve_command,
    "dashboard": serve.serve_command,  # the same server on loopback, for one person's local store
    "check": catalog.check,
    "list": catalog.list_command,
    "sources": catalog.sources,
    "init": setup.init,
    "graph": catalog.graph,
    "walk": catalog.walk_command,
    "runs": _runs,
    "token": setup.token,
    "key": _key,
    "gate": _gate,
    "person": _person,
    "stats": stats.stats_command,
    "audit": _audit,
    "notify": notify.notify_command,
    "completion": _completion,
}


def _innermost(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command `args` were parsed for: `handrail runs list`'s."""
    for action in parser._actions:  # as _describe
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(args, action.dest, None) or "")
            if chosen is not None:
                return _innermost(chosen, args)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:  # named by the command they were given to, which lists its options
            _innermost(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as exc:
        return int(exc.code or 0) if exc.code in (0, None) else EXIT_USAGE
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    handler = COMMANDS[args.command]
    try:
        code: int = handler(args)
    except BrokenPipeError:  # `handrail check ... | head`: the reader left; no traceback
        import os  # lazy: loaded when the command runs

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    return code
