"""The `handrail` command: check, start, serve, list, sources, init, graph, walk."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from handrail import __version__

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2


def _add_source_options(parser: argparse.ArgumentParser) -> None:
    from handrail.limits import MAX_FILE_BYTES

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
    parser.add_argument(
        "--max-file-size",
        type=int,
        default=MAX_FILE_BYTES,
        metavar="BYTES",
        help=f"refuse workflow files larger than this (default {MAX_FILE_BYTES})",
    )


def _add_limit_options(parser: argparse.ArgumentParser) -> None:
    """What a server refuses (see handrail.limits); over a limit is -32602 naming it."""
    from handrail import limits

    def positive(text: str) -> int:
        value = int(text)
        if value < 1:
            raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
        return value

    for flag, default, metavar, what in (
        ("--max-output", limits.MAX_OUTPUT_LENGTH, "CHARS", "longest workflow_validate output"),
        ("--max-context", limits.MAX_CONTEXT_BYTES, "BYTES", "largest context, as JSON"),
        ("--max-depth", limits.MAX_DEPTH, "LEVELS", "deepest nesting of a tool call's arguments"),
        ("--max-completed-steps", limits.MAX_COMPLETED_STEPS, "N", "most entries in completedSteps"),
        ("--regex-timeout", limits.REGEX_TIMEOUT_MS, "MS", "time limit of a backtracking regex search"),
        ("--max-request-seconds", limits.MAX_REQUEST_SECONDS, "S", "time budget of one request"),
        ("--max-reply", limits.MAX_REPLY_BYTES, "BYTES", "largest result of a tool, as JSON"),
        ("--max-workflow-steps", limits.MAX_WORKFLOW_STEPS, "N", "most steps in workflow_validate_json"),
        ("--max-workflow-depth", limits.MAX_WORKFLOW_DEPTH, "LEVELS", "nesting of workflow_validate_json"),
        ("--max-compiled-workflows", limits.MAX_COMPILED_WORKFLOWS, "N", "compiled workflows kept in memory"),
    ):
        parser.add_argument(
            flag, type=positive, default=default, metavar=metavar, help=f"{what} (default {default})"
        )


def _add_check_options(parser: argparse.ArgumentParser, *, serving: bool = True) -> None:
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


def _check_config(args: argparse.Namespace, command: str) -> Any:
    """The CheckConfig of the options and the environment; None after saying what is wrong."""
    import os

    from handrail.checks.config import check_config

    try:
        return check_config(
            allow_commands=getattr(args, "allow_commands", False),
            commands=args.commands,
            environ=os.environ,
        )
    except ValueError as exc:
        print(f"handrail {command}: {exc}", file=sys.stderr)
        return None


def _add_transport_options(parser: argparse.ArgumentParser, *, http: bool) -> None:
    """What a transport bounds (see handrail.limits.TransportLimits and SECURITY.md)."""
    from handrail import limits

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


def _transport_limits(args: argparse.Namespace) -> Any:
    from handrail.limits import TransportLimits

    return TransportLimits(
        workers=args.workers or 0,
        max_queued=args.max_queued,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        keep_alive=args.keep_alive,
        max_connections=args.max_connections,
        shutdown_timeout=args.shutdown_timeout,
    )


def _limits(args: argparse.Namespace) -> Any:
    from handrail.limits import MAX_LINE_BYTES, Limits

    return Limits(
        max_line_bytes=getattr(args, "max_line", MAX_LINE_BYTES),
        max_output_length=args.max_output,
        max_context_bytes=args.max_context,
        max_depth=args.max_depth,
        max_completed_steps=args.max_completed_steps,
        max_workflow_bytes=args.max_file_size,
        regex_timeout_ms=args.regex_timeout,
        max_request_seconds=args.max_request_seconds,
        max_reply_bytes=args.max_reply,
        max_workflow_steps=args.max_workflow_steps,
        max_workflow_depth=args.max_workflow_depth,
    )


def build_parser() -> argparse.ArgumentParser:
    from handrail import limits

    parser = argparse.ArgumentParser(
        prog="handrail", description="Step-by-step workflows for AI agents, over MCP."
    )
    parser.add_argument("--version", action="version", version=f"handrail {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    start = sub.add_parser("start", help="serve the workflows over stdio (for MCP clients)")
    _add_source_options(start)
    start.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="stderr log level",
    )
    start.add_argument(
        "--max-line",
        type=int,
        default=limits.MAX_LINE_BYTES,
        metavar="BYTES",
        help=f"longest accepted message line (default {limits.MAX_LINE_BYTES // 2**20} MiB)",
    )
    _add_limit_options(start)
    _add_check_options(start)
    _add_run_options(start)
    _add_transport_options(start, http=False)
    start.add_argument(
        "--reload-interval",
        type=float,
        default=limits.RELOAD_INTERVAL_S,
        metavar="SECONDS",
        help="at most how long changed workflow files are gathered before a reload "
        f"(default {limits.RELOAD_INTERVAL_S})",
    )

    serve = sub.add_parser("serve", help="serve the workflows over Streamable HTTP at /mcp")
    _add_source_options(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="port (default 8765)")
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="another Host header value to accept (repeatable; localhost is always accepted)",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="another Origin to accept, e.g. https://app.example.com (repeatable)",
    )
    serve.add_argument(
        "--tokens",
        default=None,
        metavar="FILE",
        help="a token per person: lines of `NAME sha256:HEX` or `NAME TOKEN` (default "
        "$HANDRAIL_TOKENS_FILE; see `handrail token`)",
    )
    serve.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    serve.add_argument("--reload-interval", type=float, default=limits.RELOAD_INTERVAL_S, metavar="SECONDS")
    _add_limit_options(serve)
    _add_check_options(serve)
    _add_run_options(serve)
    _add_transport_options(serve, http=True)

    dashboard = sub.add_parser("dashboard", help="watch and approve this machine's runs in a browser")
    _add_source_options(dashboard)
    dashboard.add_argument("--port", type=int, default=8766, help="port on 127.0.0.1 (default 8766)")
    dashboard.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    dashboard.add_argument("--reload-interval", type=float, default=0.5, metavar="SECONDS")
    dashboard.set_defaults(host="127.0.0.1", allow_host=[], allow_origin=[], tokens=None)
    _add_limit_options(dashboard)
    _add_check_options(dashboard)
    _add_run_options(dashboard)
    _add_transport_options(dashboard, http=True)

    check = sub.add_parser("check", help="report every problem in workflow files")
    check.add_argument("paths", nargs="+", metavar="PATH", help="files or folders (recursive)")
    check.add_argument("--format", choices=["text", "json", "sarif"], default="text")
    check.add_argument("--max-file-size", type=int, default=limits.MAX_FILE_BYTES, metavar="BYTES")
    _add_check_options(check, serving=False)

    listing = sub.add_parser("list", help="the workflows in service, and broken files")
    _add_source_options(listing)
    listing.add_argument("--format", choices=["text", "json"], default="text")

    sources = sub.add_parser("sources", help="where workflows come from, in precedence order")
    _add_source_options(sources)

    init = sub.add_parser("init", help="create ~/.handrail/workflows with a sample workflow")
    init.add_argument(
        "--dir", type=Path, default=None, help="folder to create (default ~/.handrail/workflows)"
    )

    graph = sub.add_parser("graph", help="draw a workflow's step graph (Mermaid or Graphviz dot)")
    graph.add_argument("workflow_id", metavar="ID", help="the workflow's id")
    graph.add_argument("--format", choices=["mermaid", "dot"], default="mermaid")
    _add_source_options(graph)

    walk = sub.add_parser("walk", help="play a workflow in the terminal, as an agent would")
    walk.add_argument("workflow_id", metavar="ID", help="the workflow's id")
    walk.add_argument("--context", default=None, metavar="JSON", help="the initial context, a JSON object")
    walk.add_argument(
        "--auto",
        action="store_true",
        help="answer every prompt with a canned output and the first value a condition looks for",
    )
    _add_source_options(walk)
    from handrail.runs_cli import add_runs_parser

    add_runs_parser(sub)
    token = sub.add_parser("token", help="make a new random token and its tokens-file line")
    token.add_argument("name", metavar="NAME", help="the person the token is for")
    return parser


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    from handrail.runs_cli import add_database_option, add_runs_only_option

    add_database_option(parser)
    add_runs_only_option(parser)


def _service(catalog: Any, args: argparse.Namespace, checks: Any) -> Any:
    """The service of `start` and `serve`: the catalog, the limits, the run store, the checks."""
    from handrail.errors import StorageError
    from handrail.service import Service, default_runs
    from handrail.store.open import check_url

    try:
        check_url(args.database)
    except StorageError as exc:
        print(f"handrail {args.command}: --database: {exc.message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None
    return Service(
        catalog, _limits(args), runs=default_runs(args.database), runs_only=args.runs_only, checks=checks
    )


def _runs(args: argparse.Namespace) -> int:
    from handrail.runs_cli import runs_command

    return runs_command(args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if exc.code in (0, None) else EXIT_USAGE
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    handler = {
        "start": _start,
        "serve": _serve,
        "dashboard": _serve,  # the same server on loopback, for one person's local store
        "check": _check,
        "list": _list,
        "sources": _sources,
        "init": _init,
        "graph": _graph,
        "walk": _walk,
        "runs": _runs,
        "token": _token,
    }[args.command]
    try:
        code: int = handler(args)
    except BrokenPipeError:  # `handrail check ... | head`: the reader left; no traceback
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    return code


def _catalog(args: argparse.Namespace) -> Any:
    from handrail.catalog import Catalog, default_sources
    from handrail.git_sources import GitSpecError

    bundled = False if args.no_bundled else None
    try:
        sources = default_sources(args.workflows, bundled=bundled, git_refresh=args.git_refresh)
    except GitSpecError as exc:
        print(f"handrail {args.command}: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None
    from handrail.limits import MAX_COMPILED_WORKFLOWS

    kept = getattr(args, "max_compiled_workflows", MAX_COMPILED_WORKFLOWS)  # a server's option
    return Catalog(sources, max_bytes=args.max_file_size, max_compiled=kept)


def _warn_missing(args: argparse.Namespace) -> None:
    """Say at once that a --workflows path does not exist: a server logs its catalog's
    problems only after its first answer, which may be long after start-up."""
    for item in args.workflows:
        if not item.startswith("git+") and not Path(item).expanduser().exists():
            print(
                f"handrail {args.command}: warning: --workflows {item}: no such file or folder",
                file=sys.stderr,
            )


START_AT_A_TERMINAL = """\
handrail start: serving MCP over stdio. This is for an MCP client, which spawns the
command and speaks JSON-RPC on its stdin and stdout; typed lines are read as JSON-RPC.
To try a workflow by hand:    handrail walk coding-task
To serve over HTTP:           handrail serve
To connect a client:          see "Connect a client" in the README, e.g.
                              claude mcp add handrail -- /path/to/.venv/bin/handrail start
Serving now; Ctrl-D or Ctrl-C stops."""


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _start(args: argparse.Namespace) -> int:
    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level.upper(),
        format="handrail %(levelname)s %(name)s: %(message)s",
    )
    from handrail.protocol import Protocol
    from handrail.stdio import serve

    if _is_terminal(sys.stdin):
        print(START_AT_A_TERMINAL, file=sys.stderr)
    _warn_missing(args)
    checks = _check_config(args, "start")
    if checks is None:
        return EXIT_USAGE
    catalog = _catalog(args)
    limits = _limits(args)
    try:
        # `initialize` is answered from a quick read of the sources; the workflows are
        # compiled (and watched) right after that first answer is out
        return serve(
            Protocol(_service(catalog, args, checks)),
            max_line=limits.max_line_bytes,
            after_first_reply=lambda: catalog.watch(interval=args.reload_interval),
            shutdown_timeout=args.shutdown_timeout,
        )
    finally:
        catalog.close()


def _serve(args: argparse.Namespace) -> int:
    import os

    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level.upper(),
        format="handrail %(levelname)s %(name)s: %(message)s",
    )
    from handrail.http import bind, serve

    checks = _check_config(args, "serve")
    if checks is None:
        return EXIT_USAGE
    people = _people(args)
    if people is False:
        return EXIT_USAGE
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        import errno

        why = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc.strerror or exc})"
        print(
            f"handrail serve: port {args.port} on {args.host} {why}; choose another with --port",
            file=sys.stderr,
        )
        return EXIT_USAGE
    _warn_missing(args)
    catalog = _catalog(args)
    catalog.watch(interval=args.reload_interval)
    port = sock.getsockname()[1]
    where = f"[{args.host}]" if ":" in args.host else args.host
    print(f"handrail serve: serving MCP at http://{where}:{port}/mcp (Ctrl-C stops)", file=sys.stderr)
    print(f"handrail {args.command}: the dashboard is at http://{where}:{port}/", file=sys.stderr)
    try:
        return serve(
            _service(catalog, args, checks),
            args.host,
            port,
            extra_hosts=args.allow_host,
            extra_origins=args.allow_origin,
            # `dashboard` serves one person's local store on loopback: no token asked
            token=None if args.command == "dashboard" else (os.environ.get("HANDRAIL_TOKEN") or None),
            people=None if args.command == "dashboard" else people,
            log_level=args.log_level,
            sock=sock,
            limits=_transport_limits(args),
        )
    finally:
        catalog.close()


def _people(args: argparse.Namespace) -> Any:
    """The people of --tokens (or HANDRAIL_TOKENS_FILE), None without one, False (said on
    stderr) when the file cannot be used: a server must not start with half its people."""
    import os

    from handrail.people import People, TokensFileError

    path = args.tokens or os.environ.get("HANDRAIL_TOKENS_FILE") or None
    if path is None:
        return None
    try:
        return People.load(path)
    except TokensFileError as exc:
        print(f"handrail serve: --tokens: {exc}", file=sys.stderr)
        return False


def _token(args: argparse.Namespace) -> int:
    from handrail.people import NAME, new_token, token_line

    if not NAME.match(args.name):
        print(
            "handrail token: a name is 1 to 64 letters, digits or . _ @ + - "
            "(starting with a letter or digit)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    token = new_token()
    print(f"token: {token}")
    print(f"line:  {token_line(args.name, token)}")
    print(
        f"Give the token to {args.name} (their client sends `Authorization: Bearer <token>`) and "
        "add the line to the tokens file (--tokens); the file then holds only its hash.",
        file=sys.stderr,
    )
    return EXIT_OK


def _check_files(paths: Sequence[str]) -> tuple[list[Path], list[str]]:
    files: list[Path] = []
    missing: list[str] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.json") if p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            missing.append(item)
    return files, missing


def _check(args: argparse.Namespace) -> int:
    from handrail.compiler import compile_path

    files, missing = _check_files(args.paths)
    for item in missing:
        print(f"handrail check: no such file or folder: {item}", file=sys.stderr)
    if missing:
        return EXIT_USAGE
    config = _check_config(args, "check")
    if config is None:
        return EXIT_USAGE
    # command names are checked only against a configuration that names some
    commands = config.commands if config.commands_configured else None
    diagnostics: list[Any] = []
    for path in files:
        diagnostics.extend(compile_path(path, max_bytes=args.max_file_size, commands=commands).diagnostics)
    errors = sum(d.severity == "error" for d in diagnostics)
    warnings = len(diagnostics) - errors
    if args.format == "json":
        print(json.dumps([d.as_dict() for d in diagnostics], indent=2, ensure_ascii=False))
    elif args.format == "sarif":
        print(json.dumps(_sarif(diagnostics), indent=2, ensure_ascii=False))
    else:
        for d in diagnostics:
            print(d.render())
        noun = "file" if len(files) == 1 else "files"
        print(
            f"checked {len(files)} {noun}: {errors} error{'s' * (errors != 1)}, "
            f"{warnings} warning{'s' * (warnings != 1)}"
        )
    return EXIT_ERRORS if errors else EXIT_OK


def _sarif(diagnostics: Sequence[Any]) -> dict[str, Any]:
    from handrail.compiler.codes import CODES

    used = sorted({d.code for d in diagnostics})
    rules = [{"id": code, "shortDescription": {"text": CODES.get(code, code)}} for code in used]
    results = []
    for d in diagnostics:
        message = d.message + (f" ({d.hint})" if d.hint else "")
        results.append(
            {
                "ruleId": d.code,
                "level": "error" if d.severity == "error" else "warning",
                "message": {"text": message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": Path(d.file).as_posix()},
                            "region": {"startLine": d.line, "startColumn": d.column},
                        },
                        "logicalLocations": [{"fullyQualifiedName": d.pointer or "/", "kind": "element"}],
                    }
                ],
            }
        )
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "handrail",
                        "version": __version__,
                        "informationUri": "https://handrail.dev",
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }


def _list(args: argparse.Namespace) -> int:
    snapshot = _catalog(args).snapshot()
    rows = [
        {
            "id": e.item.id,
            "name": e.item.name,
            "version": e.item.version,
            "source": e.source.name,
            "file": e.item.file,
            "steps": e.item.step_count,
            "stale": e.stale,
            **({"git": dict(e.origin)} if e.origin is not None else {}),
        }
        for e in snapshot.entries.values()
    ]
    broken = [d.as_dict() for d in snapshot.problems]
    code = EXIT_ERRORS if any(d.severity == "error" for d in snapshot.problems) else EXIT_OK
    if args.format == "json":
        print(json.dumps({"workflows": rows, "diagnostics": broken}, indent=2, ensure_ascii=False))
        return code
    width = max([len(r["id"]) for r in rows] + [2])
    for r in rows:
        stale = "  (file broken: serving last good version)" if r["stale"] else ""
        commit = f"  (git {str(r['git']['commit'])[:12]})" if "git" in r else ""
        print(
            f"{r['id']:<{width}}  {r['version']:<8} {r['steps']:>3} steps  {r['source']:<8} "
            f"{r['name']}{stale}{commit}"
        )
    if broken:
        print(f"\n{len(broken)} problem{'s' * (len(broken) != 1)} in workflow files:")
        for d in snapshot.problems:
            print("  " + d.render())
    print(f"\n{len(rows)} workflow{'s' * (len(rows) != 1)}")
    return code


def _sources(args: argparse.Namespace) -> int:
    catalog = _catalog(args)
    snapshot = catalog.snapshot()
    for rank, source in enumerate(catalog.sources, 1):
        exists = source.path.exists()
        count = snapshot.per_source.get(source, 0)
        state = f"{count} workflow{'s' * (count != 1)}" if exists else "missing"
        if source.git is not None:  # the repository, the commit served, and a failed fetch
            git = source.git
            at = f"commit {git.commit}" if git.commit else "nothing fetched"
            print(f"{rank}. {source.name:<28} {git.spec.shown}  [{state}, {at}]")
            print(f"     checkout {source.path}")
            if git.error:
                print(f"     cannot fetch: {git.error}")
        else:
            print(f"{rank}. {source.name:<28} {source.path}  [{state}]")
        for workflow_id, winner, loser in snapshot.overrides:
            if winner == source:
                print(f"     overrides `{workflow_id}` from {loser.name} ({loser.path})")
    print("\nLater sources take precedence over earlier ones.")
    return EXIT_OK


SAMPLE = {
    "$schema": "https://handrail.dev/schemas/workflow/v1.json",
    "id": "my-first-workflow",
    "name": "My First Workflow",
    "description": "A sample: understand a task, do it, and report, with a check on the report.",
    "version": "0.1.0",
    "steps": [
        {
            "id": "understand",
            "title": "Understand the task",
            "prompt": (
                "Restate the task in your own words and list open questions. "
                "When none is left, set `ready` to true in the context."
            ),
        },
        {
            "id": "do-it",
            "title": "Do the work",
            "prompt": "Carry out the task.",
            "runCondition": "ready == true",  # `check` warns (H307) when no text asks for it
        },
        {
            "id": "report",
            "title": "Report",
            "prompt": "Summarise what you did and how you checked it.",
            "validationCriteria": [
                {"type": "length", "min": 40, "message": "The report needs a few sentences"}
            ],
        },
    ],
}


def _init(args: argparse.Namespace) -> int:
    folder: Path = args.dir or Path.home() / ".handrail" / "workflows"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / "my-first-workflow.json"
        if target.exists():
            print(f"{target} already exists; left as it is.")
        else:
            target.write_text(json.dumps(SAMPLE, indent=2) + "\n", encoding="utf-8")
            print(f"created {target}")
    except OSError as exc:
        print(f"handrail init: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(
        "\nNext:\n"
        f"  handrail check {folder}        # see that it compiles\n"
        "  handrail list                   # see every workflow the server will offer\n"
        "  handrail start                  # serve them to your MCP client over stdio"
    )
    return EXIT_OK


def _workflow(args: argparse.Namespace, command: str) -> Any:
    """The workflow named by args.workflow_id, or None after saying on stderr that there is none."""
    import difflib

    snapshot = _catalog(args).snapshot()
    found = snapshot.get(args.workflow_id)
    if found is None:
        message = f"handrail {command}: no workflow `{args.workflow_id}`"
        close = difflib.get_close_matches(args.workflow_id, list(snapshot.entries), n=3, cutoff=0.5)
        if close:
            message += "; did you mean " + " or ".join(f"`{c}`" for c in close) + "?"
        elif snapshot.entries:
            message += " (`handrail list` shows them all)"
        print(message, file=sys.stderr)
    return found


def _graph(args: argparse.Namespace) -> int:
    from handrail.graph import render

    workflow = _workflow(args, "graph")
    if workflow is None:
        return EXIT_ERRORS
    sys.stdout.write(render(workflow, args.format))
    return EXIT_OK


def _walk(args: argparse.Namespace) -> int:
    from handrail.walkthrough import walk

    context: Any = {}
    if args.context is not None:
        try:
            context = json.loads(args.context)
        except ValueError as exc:
            print(f"handrail walk: --context is not JSON: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if not isinstance(context, dict):
            print("handrail walk: --context must be a JSON object", file=sys.stderr)
            return EXIT_USAGE
    workflow = _workflow(args, "walk")
    if workflow is None:
        return EXIT_ERRORS
    code: int = walk(workflow, sys.stdin, sys.stdout, context=context, auto=args.auto)
    return code
