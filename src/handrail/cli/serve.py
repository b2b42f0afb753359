"""`handrail start` (stdio), `handrail serve` (Streamable HTTP) and `handrail dashboard`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from handrail.cli import notify_options, options
from handrail.cli.oidc_options import add_oidc_options, provider_of
from handrail.cli.options import EXIT_USAGE
from handrail.cli.serving import background, roles_of, service_of, traced, traced_by, watched
from handrail.observe import logs
from handrail.settings import settings


def add_start(start: argparse.ArgumentParser) -> None:
    from handrail.model import limits  # lazy: loaded when the command runs

    options.add_source_options(start)
    options.add_serving_options(start)
    start.add_argument(
        "--max-line",
        type=options.positive_int,
        default=limits.MAX_LINE_BYTES,
        metavar="BYTES",
        help=f"longest accepted message line (default {limits.MAX_LINE_BYTES // 2**20} MiB)",
    )
    options.add_limit_options(start)
    options.add_check_options(start)
    options.add_run_options(start)
    notify_options.add_notify_options(start)
    options.add_transport_options(start, http=False)


def add_serve(serve: argparse.ArgumentParser) -> None:
    options.add_source_options(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument(
        "--port", type=options.port_number, default=8765, help="port (default 8765; 0 picks a free one)"
    )
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
        "--audit-log",
        default=None,
        metavar="FILE",
        help="append every run event, as it is written, to FILE as a JSON line (see `handrail audit`)",
    )
    serve.add_argument(
        "--trust-proxy",
        action="append",
        default=[],
        metavar="ADDR",
        help="a proxy (address or network, e.g. 10.0.0.5 or 10.0.0.0/24) whose Forwarded or "
        "X-Forwarded-Host/-Proto headers name the origin browsers use (repeatable)",
    )
    serve.add_argument(
        "--tokens",
        default=None,
        metavar="FILE",
        help="a token per person: lines of `NAME sha256:HEX` or `NAME TOKEN` (default "
        "$HANDRAIL_TOKENS_FILE; see `handrail token`)",
    )
    serve.add_argument(
        "--metrics",
        action="store_true",
        help="serve /metrics in the Prometheus text format (behind the tokens /mcp asks for)",
    )
    serve.add_argument(
        "--metrics-token",
        default=None,
        metavar="TOKEN",
        help="the token a scraper sends for /metrics instead (default $HANDRAIL_METRICS_TOKEN)",
    )
    add_oidc_options(serve)
    options.add_serving_options(serve)
    options.add_limit_options(serve)
    options.add_check_options(serve)
    options.add_run_options(serve)
    notify_options.add_notify_options(serve)
    options.add_transport_options(serve, http=True)
    from handrail.cli.record import add_signing_key_option  # lazy: `start` signs nothing

    add_signing_key_option(serve, "signs run records; its public half is served at /.well-known/handrail-key")


def add_dashboard(dashboard: argparse.ArgumentParser) -> None:
    options.add_source_options(dashboard)
    dashboard.add_argument(
        "--port", type=options.port_number, default=8766, help="port on 127.0.0.1 (default 8766)"
    )
    options.add_serving_options(dashboard)
    dashboard.set_defaults(host="127.0.0.1", allow_host=[], allow_origin=[], trust_proxy=[], tokens=None)
    _unlisted(dashboard, options.add_limit_options)
    options.add_check_options(dashboard)
    options.add_run_options(dashboard)
    notify_options.add_notify_options(dashboard)
    _unlisted(dashboard, lambda parser: options.add_transport_options(parser, http=True))
    from handrail.cli.record import add_signing_key_option  # lazy: `start` signs nothing

    add_signing_key_option(
        dashboard, "signs run records; its public half is served at /.well-known/handrail-key"
    )


def _unlisted(parser: argparse.ArgumentParser, add: Any) -> None:
    """Add the options `add` adds, taken but left out of --help: a server's tuning, which
    `handrail serve --help` lists, would bury the dashboard's own few."""

    class Unlisted:
        def add_argument(self, *names: Any, **kwargs: Any) -> Any:
            return parser.add_argument(*names, **{**kwargs, "help": argparse.SUPPRESS})

    add(Unlisted())


@contextmanager
def audit_log(service: Any, path: str | None) -> Iterator[None]:
    """`--audit-log FILE`: the store's events from now on appended to FILE while serving."""
    if path is None:
        yield
        return
    from pathlib import Path  # lazy: only a server with --audit-log

    from handrail.runs.audit import AuditLog  # as Path
    from handrail.store.rows import now  # as Path

    try:
        Path(path).open("ab").close()
    except OSError as exc:
        print(f"handrail serve: --audit-log: cannot append to {path}: {exc.strerror or exc}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None
    appender = AuditLog(service.runs.ledger.store, Path(path), now())
    appender.start()
    try:
        yield
    finally:
        appender.stop()


def _reachable(url: str, host: str, port: int) -> str:
    """The dashboard's address as a person on this machine opens it: a server listening on
    every interface is reached on loopback."""
    if host in ("0.0.0.0", ""):
        return f"http://127.0.0.1:{port}/"
    if host == "::":
        return f"http://[::1]:{port}/"
    return url


START_AT_A_TERMINAL = """\
handrail start: serving MCP over stdio. This is for an MCP client, which spawns the
command and speaks JSON-RPC on its stdin and stdout; typed lines are read as JSON-RPC.
To try a workflow by hand:    {typed} walk coding-task
To serve over HTTP:           {typed} serve
To connect a client:          see "Connect a client" in the README, e.g.
                              claude mcp add handrail -- {spawned} start
Serving now; Ctrl-D or Ctrl-C stops."""


def is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _log_to_stderr(args: argparse.Namespace) -> None:
    """A server's log at --log-level, on stderr: stdout may carry the protocol. Applied
    with the first record, or once `handrail start` has answered first (observe/logs.py)."""
    level = args.log_level.upper()

    def apply() -> None:
        import logging  # lazy: not before the first answer

        form = "handrail %(levelname)s %(name)s: %(message)s"
        logging.basicConfig(stream=sys.stderr, level=level, format=form)

    logs.configure(apply)


def _after_first_answer(catalog: Any, interval: float) -> None:
    """What `handrail start` does once `initialize` is answered: the log configured, orjson
    loaded, the first listing's problems logged, the workflows compiled and watched."""
    from handrail.model import codec  # lazy: loaded when the command runs

    logs.settle()
    codec.load_orjson()
    catalog.watch(interval=interval)


def start(args: argparse.Namespace) -> int:
    from handrail.model import codec  # lazy: loaded when the command runs

    codec.stdlib_first()  # orjson loads after the first answer (model/codec.py)
    try:
        return _start(args)
    finally:  # a start that ends before its first answer leaves the codec as it was
        codec.stdlib_first(False)


def _start(args: argparse.Namespace) -> int:
    _log_to_stderr(args)
    from handrail.protocol.core import Protocol  # lazy: loaded when the command runs
    from handrail.transport.stdio import serve  # lazy: loaded when the command runs

    if is_terminal(sys.stdin):
        typed, spawned = options.invoked_as()
        print(START_AT_A_TERMINAL.format(typed=typed, spawned=spawned), file=sys.stderr)
    options.warn_missing(args)
    checks = options.check_config_of(args, "start")
    if checks is None:
        return EXIT_USAGE
    notifying = notify_options.config_of(args)
    catalog = options.catalog_of(args, deferred=True)
    limits = options.limits_of(args)
    try:
        tracer = traced("pipe", args.shutdown_timeout)
        served = service_of(catalog, args, checks, notifying=notifying, **traced_by(tracer))
        with background(served):
            # `initialize` is answered from a quick read of the sources; the workflows are
            # compiled (and watched) right after that first answer is out
            return serve(
                Protocol(served.service, tracer=tracer),
                max_line=limits.max_line_bytes,
                after_first_reply=lambda: _after_first_answer(catalog, args.reload_interval),
                shutdown_timeout=args.shutdown_timeout,
            )
    finally:
        catalog.close()


def _bound(args: argparse.Namespace) -> Any:
    """The listening socket of --host and --port; None when it cannot be had (said)."""
    from handrail.transport.http import bind  # lazy: loaded when the command runs

    try:
        return bind(args.host, args.port)
    except OSError as exc:
        import errno  # lazy: loaded when the command runs
        import socket  # lazy: loaded when the command runs

        if isinstance(exc, socket.gaierror):  # the name, not the port, is what is wrong
            problem = f"host {args.host!r} cannot be found ({exc.strerror or exc}); check --host"
        else:
            why = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc.strerror or exc})"
            problem = f"port {args.port} on {args.host} {why}; choose another with --port"
        print(f"handrail {args.command}: {problem}", file=sys.stderr)
        return None


def serve_command(args: argparse.Namespace) -> int:
    _log_to_stderr(args)
    logs.settle()  # an HTTP server's log is configured before uvicorn's
    from handrail.cli.record import signing_key_of  # lazy: `start` signs nothing
    from handrail.transport.http import serve  # lazy: loaded when the command runs

    checks = options.check_config_of(args, "serve")
    if checks is None:
        return EXIT_USAGE
    people = people_of(args)
    if people is False:
        return EXIT_USAGE
    from handrail.dashboard.forwarded import parse_proxies  # lazy: loaded when the command runs

    try:
        proxies = parse_proxies(args.trust_proxy)
    except ValueError as exc:
        print(f"handrail {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    key = signing_key_of(args, args.command)
    if key is False:
        return EXIT_USAGE
    notifying = notify_options.config_of(args)
    sock = _bound(args)
    if sock is None:
        return EXIT_USAGE
    provider = provider_of(args, sock) if args.command == "serve" else None
    if provider is False:
        return EXIT_USAGE
    options.warn_missing(args)
    catalog = options.catalog_of(args)
    catalog.watch(interval=args.reload_interval)
    port = sock.getsockname()[1]
    dashboard = _said_where(args, port)
    try:
        served_people = None if args.command == "dashboard" else people
        shared = None if args.command == "dashboard" else (settings().token or None)
        service: Any  # made below; the metrics' scrapes read it
        metrics, tracer, watching = watched(args, lambda: service)
        served = service_of(
            catalog,
            args,
            checks,
            dashboard_url=_reachable(dashboard, args.host, port),
            people=served_people,
            with_tokens=bool(served_people or shared or provider),
            notifying=notifying,
            **watching,
            **roles_of(provider, served_people),
        )
        service = served.service
        with background(served), audit_log(service, getattr(args, "audit_log", None)):
            return serve(
                service,
                args.host,
                port,
                extra_hosts=args.allow_host,
                extra_origins=args.allow_origin,
                # `dashboard` serves one person's local store on loopback: no token asked
                token=shared,
                people=served_people,
                log_level=args.log_level,
                sock=sock,
                limits=options.transport_limits(args),
                hooks=hooks_of(service, args),
                public_key=key.public.published() if key else None,
                metrics=metrics,
                tracer=tracer,
                metrics_token=settings(args).metrics_token or None,
                trusted_proxies=proxies,
                provider=provider,
            )
    finally:
        catalog.close()


def _said_where(args: argparse.Namespace, port: int) -> str:
    """Say on stderr where MCP and the dashboard are served; the dashboard's address."""
    where = f"[{args.host}]" if ":" in args.host else args.host
    print(
        f"handrail {args.command}: serving MCP at http://{where}:{port}/mcp (Ctrl-C stops)", file=sys.stderr
    )
    dashboard = f"http://{where}:{port}/"
    print(f"handrail {args.command}: the dashboard is at {dashboard}", file=sys.stderr)
    return dashboard


def hooks_of(service: Any, args: argparse.Namespace) -> Any:
    """The gate's HTTP hooks (POST /hooks/<harness>), answered from the server's store."""
    from handrail.gate.http_hooks import HookServer  # lazy: only `serve` answers hooks

    folders = [str(f) for f in getattr(args, "workflows", None) or [] if not str(f).startswith("git+")]
    return HookServer(service.runs, args.database, folders).answer


def people_of(args: argparse.Namespace) -> Any:
    """The people of --tokens (or HANDRAIL_TOKENS_FILE), None without one, False (said on
    stderr) when the file cannot be used: a server must not start with half its people."""
    from handrail.service.people import People, TokensFileError  # lazy: loaded when the command runs

    path = settings(args).tokens_file or None
    if path is None:
        return None
    try:
        return People.load(path)
    except TokensFileError as exc:
        print(f"handrail serve: --tokens: {exc}", file=sys.stderr)
        return False
