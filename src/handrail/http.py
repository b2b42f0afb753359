"""The Streamable HTTP transport: POST /mcp answers with application/json.

Stateless by design: every request carries what it needs (loop progress travels
in `state`), so any number of replicas behind a load balancer give the same
answers. Origin and Host are checked against allow-lists (DNS rebinding), and a
bearer token is required when HANDRAIL_TOKEN is set.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from handrail.protocol import KNOWN_VERSIONS, Protocol, encode
from handrail.service import Service

log = logging.getLogger("handrail.http")
LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")
MAX_BODY = 4 * 1024 * 1024


@dataclass
class HttpSettings:
    allowed_hosts: set[str] = field(default_factory=lambda: set(LOCAL_HOSTS))
    allowed_origins: set[str] = field(default_factory=set)  # beyond http(s)://<allowed host>[:port]
    token: str | None = None
    max_body: int = MAX_BODY


def _host_name(value: str) -> str:
    """`example.com:8080` -> `example.com`; `[::1]:80` -> `[::1]`."""
    if value.startswith("["):
        return value.split("]", 1)[0] + "]"
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _error(status: int, code: int, message: str, **data: Any) -> Response:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message, "data": data}}
    return Response(encode(body), status_code=status, media_type="application/json")


def create_app(service: Service, settings: HttpSettings | None = None) -> Starlette:
    config = settings or HttpSettings()

    def origin_allowed(origin: str) -> bool:
        if origin in config.allowed_origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and _host_name(parts.netloc) in config.allowed_hosts

    def refuse(request: Request) -> Response | None:
        host = _host_name(request.headers.get("host", ""))
        if host not in config.allowed_hosts:
            return _error(403, -32000, "Forbidden: Host not allowed", host=host)
        origin = request.headers.get("origin")
        if origin is not None and not origin_allowed(origin):
            return _error(403, -32000, "Forbidden: Origin not allowed", origin=origin)
        if config.token is not None:
            given = request.headers.get("authorization", "")
            expected = f"Bearer {config.token}"
            if not hmac.compare_digest(given.encode(), expected.encode()):
                response = _error(401, -32000, "Unauthorized: a bearer token is required")
                response.headers["WWW-Authenticate"] = 'Bearer realm="handrail"'
                return response
        version = request.headers.get("mcp-protocol-version")
        if version is not None and version not in KNOWN_VERSIONS:
            return _error(
                400,
                -32000,
                "Bad Request: unsupported MCP-Protocol-Version",
                supportedVersions=list(KNOWN_VERSIONS),
                requestedVersion=version,
            )
        return None

    async def mcp(request: Request) -> Response:
        refused = refuse(request)
        if refused is not None:
            return refused
        if request.method != "POST":
            return Response(status_code=405, headers={"Allow": "POST"})
        body = await request.body()
        if len(body) > config.max_body:
            return _error(413, -32600, "Invalid Request", details="body too large", limit=config.max_body)
        protocol = Protocol(service)
        protocol.initialized = True  # stateless: no session to initialize
        reply = protocol.handle(body)
        if reply is None:
            return Response(status_code=202)
        return Response(reply, media_type="application/json")

    async def healthz(request: Request) -> Response:
        snapshot = service.catalog.snapshot()
        return JSONResponse(
            {"status": "ok", "workflows": len(snapshot.entries), "problems": len(snapshot.problems)}
        )

    return Starlette(
        routes=[
            Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]),
            Route("/healthz", healthz, methods=["GET"]),
        ]
    )


def serve(
    service: Service,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    extra_hosts: Iterable[str] = (),
    extra_origins: Iterable[str] = (),
    token: str | None = None,
    log_level: str = "warning",
) -> int:
    import uvicorn

    hosts = set(LOCAL_HOSTS) | set(extra_hosts)
    if host not in ("0.0.0.0", "::"):
        hosts.add(host)
    settings = HttpSettings(allowed_hosts=hosts, allowed_origins=set(extra_origins), token=token)
    app = create_app(service, settings)
    uvicorn.run(app, host=host, port=port, log_level=log_level)
    return 0
