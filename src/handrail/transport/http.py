"""The Streamable HTTP transport: POST /mcp answers with application/json.

Stateless by design: every request carries what it needs (loop progress travels
in `state`, and 2026-07-28 requests carry their protocol version in `_meta`), so
any number of replicas behind a load balancer give the same answers. The
protocol core is the stdio server's (`Protocol`), so both transports answer a
request alike; this module adds only what HTTP needs:

- Host and Origin are checked against allow-lists (DNS rebinding): 403; a bearer
  token is required when HANDRAIL_TOKEN or a tokens file is set: 401; the token names
  the person asking (handrail.service.people), the owner of the request (handrail.model.request)
  each POST is answered as (both checks:
  transport/security.py; a refusal is an RpcError sent through the one builder);
- POST /hooks/<harness> hands a harness's hook input to the gate's answer (`hooks`,
  given by the command: the gate is a layer above), behind the same checks;
- GET (no server-to-client stream is offered) and DELETE (no sessions): 405;
- an Accept that rules out JSON: 406; a body that is not JSON: 415; too large: 413;
- MCP-Protocol-Version must name a version we speak; a 2026-07-28 request's
  MCP-Protocol-Version, Mcp-Method and Mcp-Name headers must agree with its body
  (-32020), and its errors take the status the revision gives them (400, 404);
- notifications and client responses: 202 without a body; JSON-RPC batches only
  at the versions that had them (2024-11-05, 2025-03-26, or no header).

Requests are answered on a bounded pool of worker threads (transport/workers.py), never on
the event loop, so a slow request stalls nobody else; a full pool is 503. Slow
clients are bounded by uvicorn's own limits plus a header and a body timeout
(limits.TransportLimits): see SECURITY.md.
"""

from __future__ import annotations

import logging
import socket
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette

from handrail.dashboard.forwarded import Network
from handrail.model.limits import TransportLimits
from handrail.observe.observer import Tracer
from handrail.service.core import Service
from handrail.service.identity_provider import Provider
from handrail.service.people import People
from handrail.transport.http_app import HookAnswer, HttpApp, HttpSettings
from handrail.transport.security import LOCAL_HOSTS

if TYPE_CHECKING:
    from handrail.transport.metrics import Metrics

log = logging.getLogger("handrail.transport.http")


def create_app(service: Service, settings: HttpSettings | None = None) -> Starlette:
    """The app serving /mcp, the hooks, the health check, the key, /metrics and the
    dashboard (transport/http_app.py)."""
    return HttpApp(service, settings).starlette()


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything is served, so that a port in use is
    an OSError the command can word in one line (uvicorn would log a traceback-like
    error and exit 1)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named here, not left as 0: asyncio turns on TCP_NODELAY only for sockets
    # whose protocol says TCP, and without it each kept-alive answer waits for the client's
    # delayed ACK (about 40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)  # connections wait in the backlog until the server accepts them
    except OSError:
        sock.close()
        raise
    return sock


def serve(
    service: Service,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    extra_hosts: Iterable[str] = (),
    extra_origins: Iterable[str] = (),
    token: str | None = None,
    people: People | None = None,
    log_level: str = "warning",
    sock: socket.socket | None = None,
    limits: TransportLimits | None = None,
    hooks: HookAnswer | None = None,
    public_key: dict[str, Any] | None = None,
    metrics: Metrics | None = None,
    metrics_token: str | None = None,
    tracer: Tracer | None = None,
    trusted_proxies: frozenset[Network] = frozenset(),
    provider: Provider | None = None,
) -> int:
    import uvicorn  # lazy: loaded only when HTTP is served

    from handrail.transport.uvicorn_parts import Server, with_header_timeout  # lazy: as uvicorn

    bounds = limits or TransportLimits()
    anyone = token is None and people is None and provider is None
    hosts = _allowed_hosts(host, extra_hosts, open_to_anyone=anyone)
    settings = HttpSettings(
        allowed_hosts=hosts,
        allowed_origins=set(extra_origins),
        token=token,
        people=people,
        transport=bounds,
        hooks=hooks,
        public_key=public_key,
        metrics=metrics,
        metrics_token=metrics_token,
        tracer=tracer,
        trusted_proxies=trusted_proxies,
        provider=provider,
    )
    app = create_app(service, settings)

    _prepare_process()

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        http=with_header_timeout(bounds.header_timeout),
        timeout_keep_alive=bounds.keep_alive,
        limit_concurrency=bounds.max_connections,
        timeout_graceful_shutdown=max(1, round(bounds.shutdown_timeout)),
        proxy_headers=False,  # whose forwarded headers count is --trust-proxy's say alone
    )
    Server(config).run(sockets=[sock if sock is not None else bind(host, port)])
    return 0


def _allowed_hosts(host: str, extra_hosts: Iterable[str], *, open_to_anyone: bool) -> set[str]:
    """The Host headers accepted, with a warning where the listening address asks for one."""
    hosts = set(LOCAL_HOSTS) | set(extra_hosts)
    if host not in ("0.0.0.0", "::"):
        hosts.add(host)
    elif not set(extra_hosts):
        log.warning(
            "listening on every interface, but only Host headers %s are accepted: "
            "name this machine's other names with --allow-host",
            ", ".join(sorted(hosts)),
        )
    if open_to_anyone and host not in LOCAL_HOSTS:
        log.warning(
            "listening on %s without HANDRAIL_TOKEN or --tokens: anyone who can reach it may call it",
            host,
        )
    return hosts


def _prepare_process() -> None:
    """What serving many connections asks of the process, set once before it serves."""
    _raise_open_files_limit()
    # A busy worker hands the interpreter lock over every 5 ms by default; a request passes
    # it between the event loop and a worker several times, so quick requests queue behind
    # a slow one for tens of milliseconds. 1 ms keeps them quick at little cost.
    sys.setswitchinterval(0.001)


def _raise_open_files_limit() -> None:
    """Each connection holds a file descriptor: the common soft limit of 1024 would stop
    the server accepting connections well before `max_connections`."""
    try:
        import resource  # lazy: loaded only when HTTP is served

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
        if soft != resource.RLIM_INFINITY and soft < wanted:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    except (ImportError, ValueError, OSError):  # not on this platform, or not allowed: keep it
        pass
