"""The options `handrail` commands share (sources, limits, checks, transports, runs),
and what they make: the catalog, the Limits, the CheckConfig, the TransportLimits."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from handrail.settings import settings

if TYPE_CHECKING:
    from handrail.store import RunStore

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2


def add_source_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workflows",
        action="append",
        default=[],
        metavar="PATH",
        help="a workflow file or folder, or a git repository: git+https://host/org/repo.git[@ref][#subdir] "
        "(also git+ssh://, git+file://; repeatable; highest precedence)",
    )
    parser.add_argument(
        "--git-refresh",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how often a server fetches its git sources again (default 60)",
    )
    parser.add_argument("--no-bundled", action="store_true", help="leave the bundled workflows out")
    add_file_size_option(parser)


def positive_int(text: str) -> int:
    """An argument that must be a whole number above zero: a usage error (exit 2) else."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def add_file_size_option(parser: argparse.ArgumentParser) -> None:
    from handrail.model.limits import MAX_FILE_BYTES  # lazy: loaded when the command runs

    parser.add_argument(
        "--max-file-size",
        type=positive_int,
        default=MAX_FILE_BYTES,
        metavar="BYTES",
        help=f"refuse workflow files larger than this (default {MAX_FILE_BYTES})",
    )


def add_limit_options(parser: argparse.ArgumentParser) -> None:
    """What a server refuses (see handrail.model.limits); over a limit is -32602 naming it."""
    from handrail.model import limits  # lazy: loaded when the command runs

    def positive(text: str) -> int:
        value = int(text)
        if value < 1:
            raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
        return value

    defaults = limits.Limits()
    for flag, field, metavar, what in (
        ("--max-output", "max_output_length", "CHARS", "longest workflow_validate output"),
        ("--max-context", "max_context_bytes", "BYTES", "largest context, as JSON"),
        ("--max-depth", "max_depth", "LEVELS", "deepest nesting of a tool call's arguments"),
        ("--max-completed-steps", "max_completed_steps", "N", "most entries in completedSteps"),
        ("--regex-timeout", "regex_timeout_ms", "MS", "time limit of a backtracking regex search"),
        ("--max-request-seconds", "max_request_seconds", "S", "time budget of one request"),
        ("--max-reply", "max_reply_bytes", "BYTES", "largest result of a tool, as JSON"),
        ("--max-workflow-steps", "max_workflow_steps", "N", "most steps in workflow_validate_json"),
        ("--max-workflow-depth", "max_workflow_depth", "LEVELS", "nesting of workflow_validate_json"),
    ):
        default = getattr(defaults, field)
        parser.add_argument(
            flag,
            dest=field,  # the Limits field it sets (see limits_of)
            type=positive,
            default=default,
            metavar=metavar,
            help=f"{what} (default {default})",
        )
    parser.add_argument(
        "--max-compiled-workflows",
        type=positive,
        default=limits.MAX_COMPILED_WORKFLOWS,
        metavar="N",
        help=f"compiled workflows kept in memory (default {limits.MAX_COMPILED_WORKFLOWS})",
    )


def invoked_as() -> tuple[str, str]:
    """How to type this command again, and the path a client should spawn: a venv's
    `handrail` is not on PATH, so advice naming a bare `handrail` would fail there."""
    import os  # lazy: loaded when the command runs
    import shutil  # lazy: loaded when the command runs

    here = os.path.abspath(sys.argv[0])
    if os.path.basename(here) != "handrail":  # `python -m handrail`: no script to name
        return "handrail", "/path/to/.venv/bin/handrail"
    found = shutil.which("handrail")
    on_path = found is not None and os.path.samefile(found, here)
    return ("handrail" if on_path else here), here


def port_number(text: str) -> int:
    """A TCP port, refused while the options are read (bind() would raise OverflowError)."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0 to 65535)")
    return port


def add_serving_options(parser: argparse.ArgumentParser) -> None:
    """What every serving command takes: its log level and how it reloads changed files."""
    from handrail.model.limits import RELOAD_INTERVAL_S  # lazy: loaded when the command runs

    levels = ["debug", "info", "warning", "error"]
    parser.add_argument(
        "--log-level", default="warning", choices=levels, help="what is logged on stderr (default warning)"
    )
    parser.add_argument(
        "--reload-interval",
        type=float,
        default=RELOAD_INTERVAL_S,
        metavar="SECONDS",
        help="at most how long changed workflow files are gathered before a reload "
        f"(default {RELOAD_INTERVAL_S})",
    )


def add_check_options(parser: argparse.ArgumentParser, *, serving: bool = True) -> None:
    """What checks may do (see spec/checks.md); the environment gives the same."""
    if serving:
        parser.add_argument(
            "--allow-commands",
            action="store_true",
            help="let workflows' command checks run programs in the workspace (or HANDRAIL_ALLOW_COMMANDS=1)",
        )
    parser.add_argument(
        "--command",
        action="append",
        dest="commands",  # `command` is the subcommand
        default=[],
        metavar="NAME=COMMAND",
        help='a command checks may name, e.g. test="pytest -q" (repeatable; '
        'also HANDRAIL_COMMANDS=\'test="pytest -q" lint="ruff check ."\')',
    )


def check_config_of(args: argparse.Namespace, command: str) -> Any:
    """The CheckConfig of the options and the environment; None after saying what is wrong."""
    import os  # lazy: loaded when the command runs

    from handrail.checks.config import check_config  # lazy: loaded when the command runs

    try:
        return check_config(
            allow_commands=getattr(args, "allow_commands", False),
            commands=args.commands,
            environ=os.environ,
        )
    except ValueError as exc:
        print(f"handrail {command}: {exc}", file=sys.stderr)
        return None


def add_transport_options(parser: argparse.ArgumentParser, *, http: bool) -> None:
    """What a transport bounds (see handrail.model.limits.TransportLimits and SECURITY.md)."""
    from handrail.model import limits  # lazy: loaded when the command runs

    def positive(kind: type[int] | type[float], zero: bool = False) -> Any:
        def parse(text: str) -> int | float:
            value = kind(text)
            if value < 0 or (value == 0 and not zero):
                raise argparse.ArgumentTypeError(
                    f"{text} is not a {'non-negative' if zero else 'positive'} number"
                )
            return value

        return parse

    options: list[tuple[str, Any, type[int] | type[float], str, str]] = [
        (
            "--shutdown-timeout",
            limits.SHUTDOWN_TIMEOUT_S,
            float,
            "SECONDS",
            "on SIGTERM or end of input, how long requests in hand may still take",
        ),
    ]
    if http:
        options += [
            ("--workers", None, int, "N", "threads answering requests (default: 4 per core, 4 to 32)"),
            (
                "--max-queued",
                limits.MAX_QUEUED_REQUESTS,
                int,
                "N",
                "requests waiting for a worker before more are refused with 503",
            ),
            (
                "--header-timeout",
                limits.HEADER_TIMEOUT_S,
                float,
                "SECONDS",
                "time a client has to send a request's headers",
            ),
            (
                "--body-timeout",
                limits.BODY_TIMEOUT_S,
                float,
                "SECONDS",
                "time a client has to send a request's body (408 after it)",
            ),
            ("--keep-alive", limits.KEEP_ALIVE_S, int, "SECONDS", "idle kept-alive connections close after"),
            (
                "--max-connections",
                limits.MAX_CONNECTIONS,
                int,
                "N",
                "open connections before new requests get 503",
            ),
        ]
    for flag, default, kind, metavar, what in options:
        shown = "" if default is None else f" (default {default:g})"
        parser.add_argument(
            flag,
            type=positive(kind, zero=flag == "--max-queued"),
            default=default,
            metavar=metavar,
            help=f"{what}{shown}",
        )


def transport_limits(args: argparse.Namespace) -> Any:
    from handrail.model.limits import TransportLimits  # lazy: loaded when the command runs

    given = {name: getattr(args, name) for name in TransportLimits._fields}
    given["workers"] = given["workers"] or 0  # None: a default for this machine
    return TransportLimits(**given)


def limits_of(args: argparse.Namespace) -> Any:
    """The Limits of a server's options: add_limit_options names each after its field."""
    from handrail.model.limits import MAX_LINE_BYTES, Limits  # lazy: loaded when the command runs

    given = {name: getattr(args, name) for name in Limits._fields if hasattr(args, name)}
    return Limits(
        **given,
        max_line_bytes=getattr(args, "max_line", MAX_LINE_BYTES),
        max_workflow_bytes=args.max_file_size,
    )


def add_database_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database",
        default=None,
        metavar="URL",
        help="the run store, sqlite:///path/to/file.db or postgresql://user@host/db "
        "(default $HANDRAIL_DATABASE_URL, else ~/.handrail/handrail.db; $HANDRAIL_HOME moves ~/.handrail)",
    )


def add_runs_only_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--runs-only",
        action="store_true",
        default=settings().runs_only,
        help="offer workflow_list and the run tools only; workflow_get/next/validate are refused "
        "(also HANDRAIL_RUNS_ONLY=1)",
    )


def with_store(
    command: str, database: str | None, work: Callable[[RunStore], int], *, reading: bool = True
) -> int:
    """`work`'s exit status, given the store `database` names, opened (for reading unless
    `reading=False`) and closed after. A SQLite file not made yet, or a store that fails,
    is said on stderr as `command`'s error (EXIT_ERRORS): no command here creates a
    database, since a new one would hold no run."""
    from handrail.model.errors import HandrailError  # lazy: loaded when the command runs
    from handrail.store.open import open_store  # lazy: loaded when the command runs

    missing = missing_database(database)
    if missing is not None:
        print(f"handrail {command}: no run database at {missing} yet", file=sys.stderr)
        return EXIT_ERRORS
    try:
        store = open_store(database, reading=reading)
        try:
            return work(store)
        finally:
            store.close()
    except HandrailError as exc:
        print(f"handrail {command}: {exc.message}", file=sys.stderr)
        return EXIT_ERRORS


def missing_database(database: str | None) -> str | None:
    """The path of the SQLite database `database` names when it does not exist yet: no
    command here creates one (folders included), since it would hold no run."""
    from handrail.model.errors import StorageError  # lazy: loaded when the command runs
    from handrail.store.open import default_url  # lazy: loaded when the command runs
    from handrail.store.urls import sqlite_path  # lazy: loaded when the command runs

    url = database or default_url()
    if not url.lower().startswith("sqlite:"):
        return None
    try:
        path = sqlite_path(url)
    except StorageError:  # said when the store is opened
        return None
    return None if path.exists() else str(path)


def add_run_options(parser: argparse.ArgumentParser) -> None:
    add_database_option(parser)
    add_runs_only_option(parser)
    parser.add_argument(
        "--approval-channels",
        type=_channels,
        default=None,
        metavar="CHANNEL,...",
        help="where a person's approval may come from: dashboard, cli, elicitation (the agent's client "
        "asks), api (default: dashboard,cli,elicitation without tokens; dashboard,cli,api with tokens)",
    )
    parser.add_argument(
        "--require-presence",
        action="store_true",
        default=False,
        help="every approval, through any channel, needs the person's passkey on the dashboard",
    )
    parser.add_argument(
        "--lease-seconds",
        type=_positive_seconds,
        default=None,
        metavar="SECONDS",
        help="how long workflow_claim gives an agent a branch; each of its calls on it renews the lease "
        "(default: HANDRAIL_LEASE_SECONDS, else 300)",
    )


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def _channels(text: str) -> frozenset[str]:
    from handrail.runs.approvers import parse_channels  # loaded only when the option is given

    try:
        return parse_channels(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--approval-channels: ")) from None


def catalog_of(args: argparse.Namespace, *, quiet: bool = False, deferred: bool = False) -> Any:
    """The catalog the source options name; `quiet`: it logs no problems (the command
    prints them); `deferred`: it logs them once it watches (Catalog)."""
    from handrail.catalog import Catalog, default_sources  # lazy: loaded when the command runs

    bundled = False if args.no_bundled else None
    try:
        sources = default_sources(args.workflows, bundled=bundled, git_refresh=args.git_refresh)
    except ValueError as exc:
        # lazy: only a git source raises it, and folders alone never load git sources
        from handrail.catalog.git_sources import GitSpecError

        if not isinstance(exc, GitSpecError):
            raise
        print(f"handrail {args.command}: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None
    from handrail.model.limits import MAX_COMPILED_WORKFLOWS  # lazy: loaded when the command runs

    kept = getattr(args, "max_compiled_workflows", MAX_COMPILED_WORKFLOWS)  # a server's option
    return Catalog(sources, max_bytes=args.max_file_size, max_compiled=kept, quiet=quiet, deferred=deferred)


def warn_missing(args: argparse.Namespace) -> None:
    """Say at once that a --workflows path does not exist: a server logs its catalog's
    problems only after its first answer, which may be long after start-up."""
    for item in args.workflows:
        if not item.startswith("git+") and not Path(item).expanduser().exists():
            print(
                f"handrail {args.command}: warning: --workflows {item}: no such file or folder",
                file=sys.stderr,
            )
