"""The Streamable HTTP transport's app (transport/http.py says what it answers and
why): `HttpApp` holds what every request shares (the protocol core, the worker
pool, the guards, the settings) in fields, and its methods are the routes' handlers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from handrail.dashboard.forwarded import Network
from handrail.model import request as asking_request
from handrail.model.codec import decode, encode
from handrail.model.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    SERVER_ERROR,
)
from handrail.model.limits import TransportLimits
from handrail.model.version import __version__
from handrail.observe.observer import Tracer
from handrail.protocol.core import Protocol, parse_error, valid_id
from handrail.protocol.revisions import (
    ALL_VERSIONS,
    CLIENT_CAPABILITIES_KEY,
    KNOWN_VERSIONS,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_KEY,
    envelope,
)
from handrail.service.core import Service
from handrail.service.identity_provider import Provider, WithProvider
from handrail.service.people import People
from handrail.transport.http_headers import accepts_json, header_mismatch, status_of
from handrail.transport.security import LOCAL_HOSTS, Guard, Refused
from handrail.transport.workers import Busy, WorkerPool, default_workers

if TYPE_CHECKING:
    from handrail.transport.metrics import Metrics

MAX_BODY = 4 * 1024 * 1024
BATCH_VERSIONS = ("2024-11-05", "2025-03-26")  # JSON-RPC batching left the protocol in 2025-06-18
MAX_HOOK_BODY = 1 << 20  # the gate reads at most this much of a hook's input
MAX_SESSION_ID = 200  # a longer Mcp-Session-Id header is not taken as the agent session

# POST /hooks/<harness>: (harness, body or None when over the limit, query, person asking)
# -> (status, JSON body or b"", headers); the gate's answer, given by the command that
# serves (the gate is a layer above this one)
HookAnswer = Callable[
    [str, bytes | None, Mapping[str, str], str | None], tuple[int, bytes, Mapping[str, str]]
]


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
    metrics: Metrics | None = None  # --metrics: /metrics in the Prometheus text format
    metrics_token: str | None = None  # --metrics-token: the one token /metrics asks for, if set
    tracer: Tracer | None = None  # OpenTelemetry (handrail/observe/tracing.py): a span per request
    trusted_proxies: frozenset[Network] = frozenset()  # --trust-proxy: their forwarded origin counts
    provider: Provider | None = None  # --oidc-issuer: the team's OpenID provider


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


def _too_large(limit: int) -> Response:
    return _error(413, INVALID_REQUEST, "Invalid Request", details="body too large", limit=limit)


def _json(reply: Any, status: int = 200) -> Response:
    return Response(encode(reply), status_code=status, media_type="application/json")


def unsupported_header(version: str, rid: Any = None) -> Response:
    return _error(
        400,
        SERVER_ERROR,
        "Bad Request: unsupported MCP-Protocol-Version",
        rid,
        supportedVersions=list(ALL_VERSIONS),
        requestedVersion=version,
    )


def agent_session(request: Request) -> str | None:
    """Which agent session a POST comes from (spec/runs.md, "Claims and leases"): the
    Mcp-Session-Id header when the client sends one, else its connection."""
    named = request.headers.get("mcp-session-id", "")
    if 0 < len(named) <= MAX_SESSION_ID and named.isascii() and named.isprintable():
        return "http-session:" + named
    peer = request.client
    return None if peer is None else f"http-connection:{peer.host}:{peer.port}"


class HttpApp:
    """One server's routes over what they share, built once by `create_app`."""

    def __init__(self, service: Service, settings: HttpSettings | None = None) -> None:
        self.service = service
        self.config = config = settings or HttpSettings()
        self.metrics = config.metrics
        # no session state: one core serves every request
        self.protocol = Protocol(service, stateless=True, observer=self.metrics, tracer=config.tracer)
        self.limits = limits = config.transport
        self.pool = WorkerPool(limits.workers or default_workers(), limits.max_queued)
        tokens = People.combined(config.people, People.shared(config.token) if config.token else None)
        self.people: People | WithProvider | None = tokens
        metadata = ""
        if config.provider is not None:
            self.people = WithProvider(tokens, config.provider)
            metadata = self.people.resource_metadata() if config.provider.audience else ""

        self.guard = Guard(
            config.allowed_hosts,
            config.allowed_origins,
            self.people,
            proxies=config.trusted_proxies,
            resource_metadata=metadata,
        )
        self.scraper = (  # a scraper's own token, when given, instead of the people's
            Guard(config.allowed_hosts, config.allowed_origins, People.shared(config.metrics_token))
            if config.metrics_token
            else self.guard
        )

    def refuse(self, request: Request, *, authenticate: bool = True) -> Response | None:
        """Host, Origin and (with `authenticate`) token checks; the person asking is
        kept in the ASGI scope (`handrail.person`, `handrail.scope`)."""
        try:
            peer = request.client.host if request.client is not None else None
            asking = self.guard.check(request.headers, authenticate=authenticate, peer=peer)
        except Refused as refused:
            return _refused(refused)
        if asking is not None:
            request.scope["handrail.person"] = asking
            found = self.guard.credential(request.headers)
            request.scope["handrail.scope"] = found[1] if found is not None else None
        return None

    async def read_body(self, request: Request, max_body: int | None = None) -> bytes | Response:
        max_body = self.config.max_body if max_body is None else max_body
        declared = request.headers.get("content-length")
        if declared is not None:
            try:
                if int(declared) > max_body:
                    return _too_large(max_body)
            except ValueError:
                return _error(400, INVALID_REQUEST, "Invalid Request", details="bad Content-Length")
        chunks: list[bytes] = []
        size = 0
        try:  # a client trickling its body must not hold a connection (or a shutdown) for long
            # a deadline on this task, not wait_for's task of its own: one fewer task a request
            async with asyncio.timeout(self.limits.body_timeout):
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > max_body:
                        return _too_large(max_body)
                    chunks.append(chunk)
        except TimeoutError:
            return _error(
                408,
                INVALID_REQUEST,
                "Invalid Request",
                details=f"the body did not arrive within {self.limits.body_timeout:g} seconds",
                limit="bodyTimeout",
                value=self.limits.body_timeout,
            )
        return b"".join(chunks)

    def answer(
        self, message: Any, version: str | None, headers: Headers, asking: asking_request.Request
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
            reply = self.protocol.reply(message, asking)
            return Response(status_code=202) if reply is None else _json(reply, status_of(reply, False))
        if not isinstance(message, dict):
            reply = self.protocol.reply(message, asking)
            return _json(reply, status_of(reply, False))
        if "id" not in message:  # a notification (or a malformed message without an id)
            if version is not None and version not in ALL_VERSIONS:
                return unsupported_header(version)
            reply = self.protocol.reply(message, asking)
            return Response(status_code=202) if reply is None else _json(reply, status_of(reply, False))
        rid = message["id"] if valid_id(message["id"]) else None
        meta = envelope(message)
        if meta is not None:
            mismatch = header_mismatch(message, meta, headers)
            if mismatch is not None:
                return _error(400, HEADER_MISMATCH, "Header mismatch", rid, details=mismatch)
            reply = self.protocol.reply(message, asking)
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
        reply = self.protocol.reply(message, asking)
        if reply is None:  # a client's response to nothing we asked
            return Response(status_code=202)
        return _json(reply, status_of(reply, False))

    async def mcp(self, request: Request) -> Response:
        refused = self.refuse(request)
        if refused is not None:
            return refused
        if request.method != "POST":
            return Response(status_code=405, headers={"Allow": "POST"})
        if not accepts_json(request.headers.get("accept")):
            return _error(406, SERVER_ERROR, "Not Acceptable: the client must accept application/json")
        content_type = request.headers.get("content-type")
        if content_type is not None and content_type.split(";")[0].strip().lower() != "application/json":
            return _error(415, SERVER_ERROR, "Unsupported Media Type: the body must be application/json")
        body = await self.read_body(request)
        if isinstance(body, Response):
            return body
        try:
            return await self.pool.run(
                self.work,
                body,
                request.headers,
                request.scope.get("handrail.person"),
                request.scope.get("handrail.scope"),
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
        self, body: bytes, headers: Headers, person: str | None, scope: str | None, session: str | None = None
    ) -> Response:
        """The protocol's part of a request, on a worker thread, as the person asking
        (`scope`: their token's, which decides whether their answers may approve) from
        the agent session `session` (which holds the branches it claims)."""
        try:
            message = decode(body)
        except ValueError as exc:
            return _json(parse_error(exc), 400)
        return self.answer(
            message,
            headers.get("mcp-protocol-version"),
            headers,
            asking_request.Request(owner=person, scope=scope, session=session),
        )

    async def hook(self, request: Request) -> Response:
        """A harness's HTTP hook (the gate, spec/gate.md): the same token rules as /mcp."""
        refused = self.refuse(request)
        if refused is not None:
            return refused
        if self.config.hooks is None:  # an app made without the gate (tests, embedding)
            return Response(status_code=404)
        if request.method != "POST":
            return Response(status_code=405, headers={"Allow": "POST"})
        read = await self.read_body(request, MAX_HOOK_BODY)
        if isinstance(read, Response) and read.status_code != 413:
            return read
        # too big is the gate's to answer: refused while a run may be the caller's
        body = None if isinstance(read, Response) else read
        answer = self.config.hooks
        harness = request.path_params["harness"]
        query = dict(request.query_params)
        person = request.scope.get("handrail.person")
        try:
            status, reply, headers = await self.pool.run(answer, harness, body, query, person)
        except Busy:
            return Response(
                b'{"error":"server busy: every worker is taken and the queue is full"}',
                status_code=503,
                headers={"Retry-After": "1"},
                media_type="application/json",
            )
        if not reply:
            return Response(status_code=status, headers=dict(headers))
        return Response(reply, status_code=status, headers=dict(headers), media_type="application/json")

    async def healthz(self, request: Request) -> Response:
        refused = self.refuse(request, authenticate=False)  # health checkers carry no token
        if refused is not None:
            return refused
        snapshot = self.service.catalog.ready  # never waits: this runs on the event loop
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

    async def published_key(self, request: Request) -> Response:
        refused = self.refuse(request, authenticate=False)  # a public key is for anyone to check with
        if refused is not None:
            return refused
        if self.config.public_key is None:
            said = "this server signs no records: it was started without --signing-key"
            return JSONResponse({"error": said}, status_code=404)
        return JSONResponse(self.config.public_key)

    async def scrape(self, request: Request) -> Response:
        """/metrics: the same Host, Origin and token rules as /mcp (or --metrics-token's)."""
        try:
            self.scraper.check(request.headers)
        except Refused as refused:
            return _refused(refused)
        assert self.metrics is not None
        from handrail.transport.metrics import CONTENT_TYPE  # loaded already with the metrics

        # the store's figures are read by a query: on a worker, never on the event loop
        try:
            body = await self.pool.run(self.metrics.exposition)
        except Busy:
            return Response(b"server busy\n", status_code=503, headers={"Retry-After": "1"})
        return Response(body, media_type=CONTENT_TYPE)

    def resource_routes(self) -> list[Route]:
        """RFC 9728 protected resource metadata: which provider /mcp's tokens come from,
        at the root and at the path-suffixed address the MCP authorization spec names."""
        provider = self.config.provider
        if provider is None or not provider.audience:
            return []
        document = {
            "resource": provider.audience,
            "authorization_servers": [provider.issuer],
            "scopes_supported": ["agent", "person"],
            "bearer_methods_supported": ["header"],
        }

        async def metadata(request: Request) -> Response:
            return _json(document)

        suffix = urlsplit(provider.audience).path.rstrip("/")
        paths = {"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource" + suffix}
        return [Route(path, metadata, methods=["GET"]) for path in sorted(paths)]

    def starlette(self) -> Starlette:
        from handrail.dashboard import dashboard_routes  # the web pages at /

        return Starlette(
            routes=[
                Route("/mcp", self.mcp, methods=["GET", "POST", "DELETE"]),
                Route("/healthz", self.healthz, methods=["GET"]),
                Route("/hooks/{harness}", self.hook, methods=["GET", "POST"]),
                Route("/.well-known/handrail-key", self.published_key, methods=["GET"]),
                *([Route("/metrics", self.scrape, methods=["GET"])] if self.metrics is not None else []),
                *self.resource_routes(),
                *dashboard_routes(
                    self.service, self.refuse, self.people, self.config.trusted_proxies, self.config.provider
                ),
            ]
        )
