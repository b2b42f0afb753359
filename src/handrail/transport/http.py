"""The Streamable HTTP transport: POST /mcp answers with application/json.

Stateless by design: every request carries what it needs (loop progress travels
in `state`, and 2026-07-28 requests carry their protocol version in `_meta`), so
any number of replicas behind a load balancer give the same answers. The
protocol core is the stdio server's (`Protocol`), so both transports answer a
request alike; this module adds only what HTTP needs:

- Host and Origin are checked against allow-lists (DNS rebinding): 403; a bearer
  token is required when HANDRAIL_TOKEN or a tokens file is set: 401; the token names
  the person asking (handrail.service.people), the owner of the request (handrail.runs.request)
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

import asyncio
import logging
import socket
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from handrail import __version__
from handrail.codec import decode, encode
from handrail.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    SERVER_ERROR,
)
from handrail.forwarded import Network
from handrail.limits import TransportLimits
from handrail.observe import Tracer
from handrail.protocol.core import Protocol, parse_error, valid_id
from handrail.protocol.revisions import (
    ALL_VERSIONS,
    CLIENT_CAPABILITIES_KEY,
    KNOWN_VERSIONS,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_KEY,
    envelope,
)
from handrail.runs import request as asking_request
from handrail.service.core import Service
from handrail.service.people import People
from handrail.transport.http_headers import accepts_json, header_mismatch, status_of
from handrail.transport.security import LOCAL_HOSTS, Guard, Refused
from handrail.transport.workers import Busy, WorkerPool, default_workers

log = logging.getLogger("handrail.transport.http")
MAX_BODY = 4 * 1024 * 1024
BATCH_VERSIONS = ("2024-11-05", "2025-03-26")  # JSON-RPC batching left the protocol in 2025-06-18
MAX_HOOK_BODY = 1 << 20  # the gate reads at most this much of a hook's input
MAX_SESSION_ID = 200  # a longer Mcp-Session-Id header is not taken as the agent session

# POST /hooks/<harness>: (harness, body, query, person asking) -> (status, JSON body or b"");
# the gate's answer, given by the command that serves (the gate is a layer above this one)
HookAnswer = Callable[[str, bytes, Mapping[str, str], str | None], tuple[int, bytes]]


@dataclass
class HttpSettings:
    allowed_hosts: set[str] = field(default_factory=lambda: set(LOCAL_HOSTS))
    allowed_origins: set[str] = field(default_factory=set)  # beyond http(s)://<allowed host>[:port]
    token: str | None = None  # HANDRAIL_TOKEN: one identity shared by whoever holds it
    people: People | None = None  # --tokens FILE: a token per person
    max_body: int = MAX_BODY
    transport: TransportLimits = field(default_factory=TransportLimits)
    hooks: HookAnswer | None = None  # the gate's HTTP hooks, when served
    public_key: dict[str, Any] | None = None  # --signing-key's public half, as published
    metrics: bool = False  # --metrics: /metrics in the Prometheus text format
    metrics_token: str | None = None  # --metrics-token: the one token /metrics asks for, if set
    tracer: Tracer | None = None  # OpenTelemetry (handrail/tracing.py): a span per request
    trusted_proxies: frozenset[Network] = frozenset()  # --trust-proxy: their forwarded origin counts


def _error(status: int, code: int, message: str, rid: Any = None, **data: Any) -> Response:
    return _refused(Refused(status, code, message, data or None), rid)


def _refused(refused: Refused, rid: Any = None) -> Response:
    """A refusal on its way out: the JSON-RPC error (RpcError.response), with its status."""
    return Response(
        encode(refused.response(rid)),
        status_code=refused.status,
        headers=refused.headers,
        media_type="application/json",
    )


def _json(reply: Any, status: int = 200) -> Response:
    return Response(encode(reply), status_code=status, media_type="application/json")


def create_app(service: Service, settings: HttpSettings | None = None) -> Starlette:
    config = settings or HttpSettings()
    metrics = None
    if config.metrics:
        from handrail.transport.metrics import attach  # prometheus_client: loaded only when asked

        metrics = attach(service)
    # no session state: one core serves every request
    protocol = Protocol(service, stateless=True, observer=metrics, tracer=config.tracer)
    limits = config.transport
    pool = WorkerPool(limits.workers or default_workers(), limits.max_queued)
    people = People.combined(config.people, People.shared(config.token) if config.token else None)

    guard = Guard(config.allowed_hosts, config.allowed_origins, people, config.trusted_proxies)
    scraper = (  # a scraper's own token, when given, instead of the people's
        Guard(config.allowed_hosts, config.allowed_origins, People.shared(config.metrics_token))
        if config.metrics_token
        else guard
    )

    def refuse(request: Request, *, authenticate: bool = True) -> Response | None:
        """Host, Origin and (with `authenticate`) token checks; the person asking is
        kept in `request.state.person`."""
        try:
            peer = request.client.host if request.client is not None else None
            asking = guard.check(request.headers, authenticate=authenticate, peer=peer)
        except Refused as refused:
            return _refused(refused)
        if asking is not None:
            request.state.person = asking
            found = guard.credential(request.headers)
            request.state.scope = found[1] if found is not None else None
        return None

    async def read_body(request: Request, max_body: int = config.max_body) -> bytes | Response:
        too_large = _error(413, INVALID_REQUEST, "Invalid Request", details="body too large", limit=max_body)
        declared = request.headers.get("content-length")
        if declared is not None:
            try:
                if int(declared) > max_body:
                    return too_large
            except ValueError:
                return _error(400, INVALID_REQUEST, "Invalid Request", details="bad Content-Length")
        chunks: list[bytes] = []

        async def gather() -> Response | None:
            size = 0
            async for chunk in request.stream():
                size += len(chunk)
                if size > max_body:
                    return too_large
                chunks.append(chunk)
            return None

        try:  # a client trickling its body must not hold a connection (or a shutdown) for long
            refused = await asyncio.wait_for(gather(), limits.body_timeout)
        except TimeoutError:
            return _error(
                408,
                INVALID_REQUEST,
                "Invalid Request",
                details=f"the body did not arrive within {limits.body_timeout:g} seconds",
                limit="bodyTimeout",
                value=limits.body_timeout,
            )
        return refused if refused is not None else b"".join(chunks)

    def unsupported_header(version: str, rid: Any = None) -> Response:
        return _error(
            400,
            SERVER_ERROR,
            "Bad Request: unsupported MCP-Protocol-Version",
            rid,
            supportedVersions=list(ALL_VERSIONS),
            requestedVersion=version,
        )

    def answer(
        message: Any, version: str | None, headers: Headers, asking: asking_request.Request
    ) -> Response:
        if isinstance(message, list):
            if version is not None and version not in ALL_VERSIONS:
                return unsupported_header(version)
            if version is not None and version not in BATCH_VERSIONS:
                return _error(
                    400,
                    INVALID_REQUEST,
                    "Invalid Request",
                    details=f"JSON-RPC batches are not part of protocol version {version}",
                )
            reply = protocol.reply(message, asking)
            return Response(status_code=202) if reply is None else _json(reply, status_of(reply, False))
        if not isinstance(message, dict):
            reply = protocol.reply(message, asking)
            return _json(reply, status_of(reply, False))
        if "id" not in message:  # a notification (or a malformed message without an id)
            if version is not None and version not in ALL_VERSIONS:
                return unsupported_header(version)
            reply = protocol.reply(message, asking)
            return Response(status_code=202) if reply is None else _json(reply, status_of(reply, False))
        rid = message["id"] if valid_id(message["id"]) else None
        meta = envelope(message)
        if meta is not None:
            mismatch = header_mismatch(message, meta, headers)
            if mismatch is not None:
                return _error(400, HEADER_MISMATCH, "Header mismatch", rid, details=mismatch)
            reply = protocol.reply(message, asking)
            return _json(reply, status_of(reply, True))
        if version is not None and version not in KNOWN_VERSIONS:
            if version not in MODERN_VERSIONS:
                return unsupported_header(version, rid)
            if "result" not in message and "error" not in message:  # a request without its envelope
                return _error(
                    400,
                    INVALID_PARAMS,
                    "Invalid params",
                    rid,
                    details=f"a {version} request carries {PROTOCOL_VERSION_KEY} and "
                    f"{CLIENT_CAPABILITIES_KEY} in params._meta",
                )
        reply = protocol.reply(message, asking)
        if reply is None:  # a client's response to nothing we asked
            return Response(status_code=202)
        return _json(reply, status_of(reply, False))

    async def mcp(request: Request) -> Response:
        refused = refuse(request)
        if refused is not None:
            return refused
        if request.method != "POST":
            return Response(status_code=405, headers={"Allow": "POST"})
        if not accepts_json(request.headers.get("accept")):
            return _error(406, SERVER_ERROR, "Not Acceptable: the client must accept application/json")
        content_type = request.headers.get("content-type")
        if content_type is not None and content_type.split(";")[0].strip().lower() != "application/json":
            return _error(415, SERVER_ERROR, "Unsupported Media Type: the body must be application/json")
        body = await read_body(request)
        if isinstance(body, Response):
            return body
        try:
            state = request.state
            return await pool.run(
                work,
                body,
                request.headers,
                getattr(state, "person", None),
                getattr(state, "scope", None),
                agent_session(request),
            )
        except Busy as busy:
            response = _error(
                503,
                SERVER_ERROR,
                "Server busy: every worker is taken and the queue is full",
                limit="maxQueuedRequests",
                value=busy.limit,
            )
            response.headers["Retry-After"] = "1"
            return response

    def work(
        body: bytes, headers: Headers, person: str | None, scope: str | None, session: str | None = None
    ) -> Response:
        """The protocol's part of a request, on a worker thread, as the person asking
        (`scope`: their token's, which decides whether their answers may approve) from
        the agent session `session` (which holds the branches it claims)."""
        try:
            message = decode(body)
        except ValueError as exc:
            return _json(parse_error(exc), 400)
        return answer(
            message,
            headers.get("mcp-protocol-version"),
            headers,
            asking_request.Request(owner=person, scope=scope, session=session),
        )

    def agent_session(request: Request) -> str | None:
        """Which agent session a POST comes from (spec/runs.md, "Claims and leases"): the
        Mcp-Session-Id header when the client sends one, else its connection."""
        named = request.headers.get("mcp-session-id", "")
        if 0 < len(named) <= MAX_SESSION_ID and named.isascii() and named.isprintable():
            return "http-session:" + named
        peer = request.client
        return None if peer is None else f"http-connection:{peer.host}:{peer.port}"

    async def hook(request: Request) -> Response:
        """A harness's HTTP hook (the gate, spec/gate.md): the same token rules as /mcp."""
        refused = refuse(request)
        if refused is not None:
            return refused
        if config.hooks is None:  # an app made without the gate (tests, embedding)
            return Response(status_code=404)
        if request.method != "POST":
            return Response(status_code=405, headers={"Allow": "POST"})
        body = await read_body(request, MAX_HOOK_BODY)
        if isinstance(body, Response):
            return body
        answer = config.hooks
        harness = request.path_params["harness"]
        query = dict(request.query_params)
        person = getattr(request.state, "person", None)
        try:
            status, reply = await pool.run(answer, harness, body, query, person)
        except Busy:
            return Response(
                b'{"error":"server busy: every worker is taken and the queue is full"}',
                status_code=503,
                headers={"Retry-After": "1"},
                media_type="application/json",
            )
        if not reply:
            return Response(status_code=status)
        return Response(reply, status_code=status, media_type="application/json")

    async def healthz(request: Request) -> Response:
        refused = refuse(request, authenticate=False)  # health checkers carry no token
        if refused is not None:
            return refused
        snapshot = service.catalog.ready  # never waits: this runs on the event loop
        if snapshot is None:
            return JSONResponse({"status": "starting", "version": __version__}, status_code=503)
        return JSONResponse(
            {
                "status": "ok",
                "version": __version__,
                "workflows": len(snapshot.entries),
                "problems": len(snapshot.problems),
            }
        )

    async def published_key(request: Request) -> Response:
        refused = refuse(request, authenticate=False)  # a public key is for anyone to check with
        if refused is not None:
            return refused
        if config.public_key is None:
            said = "this server signs no records: it was started without --signing-key"
            return JSONResponse({"error": said}, status_code=404)
        return JSONResponse(config.public_key)

    async def scrape(request: Request) -> Response:
        """/metrics: the same Host, Origin and token rules as /mcp (or --metrics-token's)."""
        try:
            scraper.check(request.headers)
        except Refused as refused:
            return _refused(refused)
        assert metrics is not None
        from handrail.transport.metrics import CONTENT_TYPE  # loaded already by attach

        # the store's figures are read by a query: on a worker, never on the event loop
        try:
            body = await pool.run(metrics.exposition)
        except Busy:
            return Response(b"server busy\n", status_code=503, headers={"Retry-After": "1"})
        return Response(body, media_type=CONTENT_TYPE)

    from handrail.dashboard import dashboard_routes  # the web pages at /

    return Starlette(
        routes=[
            Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/hooks/{harness}", hook, methods=["GET", "POST"]),
            Route("/.well-known/handrail-key", published_key, methods=["GET"]),
            *([Route("/metrics", scrape, methods=["GET"])] if metrics is not None else []),
            *dashboard_routes(service, refuse, people, config.trusted_proxies),
        ]
    )


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
    metrics: bool = False,
    metrics_token: str | None = None,
    tracer: Tracer | None = None,
    trusted_proxies: frozenset[Network] = frozenset(),
) -> int:
    import uvicorn  # lazy: loaded only when HTTP is served
    from uvicorn.protocols.http.h11_impl import H11Protocol  # lazy: loaded only when HTTP is served

    bounds = limits or TransportLimits()

    hosts = set(LOCAL_HOSTS) | set(extra_hosts)
    if host not in ("0.0.0.0", "::"):
        hosts.add(host)
    elif not set(extra_hosts):
        log.warning(
            "listening on every interface, but only Host headers %s are accepted: "
            "name this machine's other names with --allow-host",
            ", ".join(sorted(hosts)),
        )
    if token is None and people is None and host not in LOCAL_HOSTS:
        log.warning(
            "listening on %s without HANDRAIL_TOKEN or --tokens: anyone who can reach it may call it",
            host,
        )
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
    )
    app = create_app(service, settings)

    class HeaderTimeoutProtocol(H11Protocol):
        """uvicorn's HTTP/1.1 protocol, plus the header timeout it lacks: a connection whose
        next request's headers have not all arrived `header_timeout` seconds after it opened
        (or after the previous answer) is closed, so half-sent requests cannot pile up."""

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def _arm(self) -> None:
            waiting_after = self.cycle  # the request answered last (None: none yet)
            self.loop.call_later(bounds.header_timeout, self._header_timeout, waiting_after)

        def _header_timeout(self, waiting_after: object) -> None:
            if self.cycle is waiting_after and not self.transport.is_closing():
                self.transport.close()

    _raise_open_files_limit()
    # A busy worker hands the interpreter lock over every 5 ms by default; a request passes
    # it between the event loop and a worker several times, so quick requests queue behind
    # a slow one for tens of milliseconds. 1 ms keeps them quick at little cost.
    sys.setswitchinterval(0.001)

    class Server(uvicorn.Server):
        """Stops on SIGINT or SIGTERM and returns, so that `handrail serve` exits 0 as
        `handrail start` does (uvicorn would raise the signal again once stopped)."""

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            super().handle_exit(sig, frame)
            self._captured_signals.clear()

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        http=HeaderTimeoutProtocol,
        timeout_keep_alive=bounds.keep_alive,
        limit_concurrency=bounds.max_connections,
        timeout_graceful_shutdown=max(1, round(bounds.shutdown_timeout)),
        proxy_headers=False,  # whose forwarded headers count is --trust-proxy's say alone
    )
    Server(config).run(sockets=[sock if sock is not None else bind(host, port)])
    return 0


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
