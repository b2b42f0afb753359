"""JSON-RPC 2.0 and the MCP lifecycle: framing rules, version negotiation and
dispatch. No I/O: bytes in, bytes out, for any transport. What MCP offers beyond
the lifecycle (tools, resources, prompts, logging, completion, subscriptions) is
registered by handrail.protocol.surface into the one handler table here.

Every message takes one path: checked as JSON-RPC, then handed with its request
(handrail.model.request: who asks, the revision, the client's capabilities) to the handler
its method names, in the style of the MCP SDK's low-level server. A result the
service already encoded is spliced into the reply as bytes, never decoded again.

Two eras of the protocol are served side by side, per request:

- the handshake era (2024-11-05 .. 2025-11-25): `initialize` first, then requests;
- the 2026-07-28 revision: no handshake; each request carries its protocol version
  and the client's capabilities in `params._meta` (the envelope), results carry
  `resultType` and, for listings, cache hints (`ttlMs`, `cacheScope`).

A request is served in the 2026 era exactly when its `_meta` holds the reserved
protocol-version key; anything else is answered as it always was.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from handrail.model.codec import Encoded, decode, encode
from handrail.model.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    SERVER_ERROR,
    RpcError,
    error_response,
)
from handrail.model.limits import Limits
from handrail.model.request import Request
from handrail.observe.logs import Log
from handrail.observe.observer import Observer, Span, Tracer
from handrail.protocol.envelope import enveloped, stamped
from handrail.protocol.revisions import (
    KNOWN_VERSIONS,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO,
    negotiate,
)
from handrail.protocol.session import Session
from handrail.protocol.surface.surface import SESSION_METHODS, Handler, Surface
from handrail.service.core import Service
from handrail.service.definitions import tool_names

log = Log("handrail.protocol.core")  # logging loads with the first record

_MISSING = object()
_TOOL_NAMES = frozenset(tool_names())  # a metric's labels name only tools that exist

_BEFORE_INITIALIZE = frozenset({"initialize", "ping", "server/discover"})
# the handshake era's own methods: the 2026-07-28 revision has no handshake, no ping, no
# shutdown, no session (logging, subscriptions), and not the seed's direct tool methods
_HANDSHAKE_ONLY = frozenset({"initialize", "ping", "shutdown", *SESSION_METHODS, *tool_names()})
MAX_TRACED_ID = 128  # characters of a request id a span keeps: the client chooses it


class Protocol:
    """One client session. `handle(line)` returns the bytes to send back, or None."""

    def __init__(
        self,
        service: Service,
        *,
        stateless: bool = False,
        observer: Observer | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        """`stateless`: every request stands alone (HTTP), so none waits for `initialize`.
        `observer`: told of every request answered (metrics); `tracer`: a span for each
        (traces). Without either the handler table is left unwrapped, so the request path
        costs nothing more."""
        self.service = service
        self.stateless = stateless
        self.initialized = stateless
        self.version: str | None = None
        self.shutdown_requested = False
        self.session = Session(stateless)
        self.client_requests = self.session.client_requests  # server -> client requests
        self.surface = Surface(self.session, service)
        # the one table: method -> handler(request, params), for both eras (see _HANDSHAKE_ONLY)
        self.handlers: dict[str, Handler] = {
            "initialize": self._initialize,
            "ping": lambda request, params: {},
            "shutdown": self._shutdown,
            "server/discover": self._discover,
            **self.surface.handlers(),
            # the seed's direct form: the tool name as the method, its result spliced in
            **{name: partial(service.answer, name) for name in tool_names()},
        }
        if observer is not None or tracer is not None:
            # a connection (stdio) is one MCP session, named as its claims name it;
            # stateless HTTP issues none
            session = None if stateless or tracer is None else self.session.request.session
            self.handlers = {m: _observed(m, h, observer, tracer, session) for m, h in self.handlers.items()}
        if tracer is not None:  # only then: the untraced path builds no request per message
            self._one = self._one_traced  # type: ignore[method-assign]

    @property
    def limits(self) -> Limits:
        return self.service.limits

    @property
    def client_ready(self) -> bool:
        return self.session.client_ready

    @property
    def sink(self) -> Callable[[bytes], None] | None:
        """Where log records for the client go (set by a transport that can send them)."""
        return self.session.sink

    def connect(self, send: Callable[[bytes], None] | None) -> None:
        """Log records for the client go to `send` (a transport that can send them)."""
        self.session.connect(send)

    @property
    def request(self) -> Request:
        """The request this session's messages start from (stdio)."""
        return self.session.request

    def on_catalog_change(self, listener: Callable[[Any], None]) -> None:
        """Call `listener` after each reload of the workflows (stdio: list_changed notes)."""
        self.surface.on_catalog_change(listener)

    def list_changed(self) -> list[bytes]:
        """Notifications owed to the client because the catalog changed (see Surface)."""
        return self.surface.list_changed()

    # -- framing -------------------------------------------------------------------
    def handle(self, data: bytes | str, request: Request | None = None) -> bytes | None:
        """The bytes answering one line, or None. `request`: who asks (HTTP: per POST);
        by default the session's."""
        try:
            message = decode(data)
        except ValueError as exc:
            return encode(parse_error(exc))
        if type(message) is dict:  # the usual message: straight to its one path
            reply = self._one(message, request or self.session.request)
            if type(reply) is bytes:
                return reply
        else:
            reply = self.reply(message, request)
        return encode(reply) if reply is not None else None

    def reply(self, message: Any, request: Request | None = None) -> Any:
        """The answer to one decoded message or batch: a response, a list of them, or None.
        A response whose result was already encoded is itself `Encoded`."""
        if request is None:
            request = self.session.request
        if isinstance(message, list):
            if not message:
                return error_response(None, INVALID_REQUEST, "Invalid Request", {"details": "empty batch"})
            replies = [_value(r) for r in (self._one(m, request) for m in message) if r is not None]
            return replies or None
        return _value(self._one(message, request))

    def _one(self, message: Any, request: Request) -> Any:
        """The response to one message: a dict, None (nothing to answer), or bytes when the
        result came encoded (spliced in, never decoded)."""
        if type(message) is not dict:
            return error_response(
                None, INVALID_REQUEST, "Invalid Request", {"details": "a message is a JSON object"}
            )
        rid = message.get("id", _MISSING)
        if rid is _MISSING:
            return self._notification(message)
        if not (type(rid) is int or type(rid) is str or valid_id(rid)):
            return error_response(
                None,
                INVALID_REQUEST,
                "Invalid Request",
                {"details": "id must be a string or an integer"},
            )
        if message.get("jsonrpc") != "2.0":
            return error_response(
                rid, INVALID_REQUEST, "Invalid Request", {"details": 'jsonrpc must be "2.0"'}
            )
        method = message.get("method")
        if type(method) is not str:
            if "result" in message or "error" in message:
                self.client_requests.resolve(message)  # the answer to one of our requests, if any
                return None
            if not isinstance(method, str):
                return error_response(
                    rid, INVALID_REQUEST, "Invalid Request", {"details": "method must be a string"}
                )
        params = message.get("params")
        if params is None:  # left out, or null: no params
            params = {}
        try:
            if type(params) is not dict and not isinstance(params, dict):
                raise RpcError(INVALID_PARAMS, "Invalid params", {"details": "params must be an object"})
            meta = params.get("_meta")  # the one look-up a handshake-era request pays for the 2026 era
            if (
                meta is not None
                and isinstance(meta, dict)
                and PROTOCOL_VERSION_KEY in meta
                and method != "initialize"
            ):
                request = enveloped(request, meta)
                handler = self.handlers.get(method)
                if handler is None or method in _HANDSHAKE_ONLY:
                    raise RpcError(METHOD_NOT_FOUND, "Method not found", {"method": method})
                result = stamped(method, handler(request, params))
            else:
                if not self.initialized and method not in _BEFORE_INITIALIZE:
                    raise RpcError(SERVER_ERROR, "Server not initialized", {"method": method})
                handler = self.handlers.get(method)
                if handler is None:
                    raise RpcError(METHOD_NOT_FOUND, "Method not found", {"method": method})
                result = handler(request, params)
                if method == "server/discover":
                    result = stamped(method, result)
        except RpcError as exc:  # HandrailError included
            return exc.response(rid)
        except Exception:
            return _internal_error(rid, method)
        if type(result) is Encoded:
            return b'{"jsonrpc":"2.0","id":' + encode(rid) + b',"result":' + result.data + b"}"
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    def _one_traced(self, message: Any, request: Request) -> Any:
        """`_one`, its request naming the message's id for the handler's span (a null or
        missing id is not recorded: OpenTelemetry's convention)."""
        rid = message.get("id") if type(message) is dict else None
        if rid is not None:
            request = request._replace(message_id=str(rid)[:MAX_TRACED_ID])
        return Protocol._one(self, message, request)

    def _notification(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """notifications/initialized, cancelled, ...: acted on where it matters, never
        answered; only a message with neither a method nor a result is refused."""
        if message.get("jsonrpc") != "2.0":
            return None
        method = message.get("method")
        if not isinstance(method, str):
            if "result" in message or "error" in message:
                return None  # a response from the client without an id: nothing to match it to
            return error_response(
                None, INVALID_REQUEST, "Invalid Request", {"details": "method must be a string"}
            )
        if method == "notifications/initialized" and self.initialized:
            self.session.ready()
            self.surface.ask_roots()
        elif method == "notifications/roots/list_changed" and self.session.client_ready:
            self.surface.ask_roots()
        return None

    # -- lifecycle -----------------------------------------------------------------
    def _initialize(self, request: Request, params: dict[str, Any]) -> dict[str, Any]:
        requested = params.get("protocolVersion", _MISSING)
        if requested is _MISSING:
            raise RpcError(INVALID_PARAMS, "Invalid params", {"details": "protocolVersion is required"})
        if not isinstance(requested, str):
            raise RpcError(INVALID_PARAMS, "Invalid params", {"details": "protocolVersion must be a string"})
        if not isinstance(params.get("capabilities", _MISSING), dict):
            detail = (
                "capabilities is required"
                if "capabilities" not in params
                else "capabilities must be an object"
            )
            raise RpcError(INVALID_PARAMS, "Invalid params", {"details": detail})
        version = negotiate(requested)
        if version is None:
            raise RpcError(
                SERVER_ERROR,
                "Unsupported protocol version",
                {"supportedVersions": list(KNOWN_VERSIONS), "requestedVersion": requested},
            )
        self.initialized = True
        self.version = version
        capabilities = params["capabilities"]
        if not self.stateless:  # HTTP: each request stands alone, and carries its own
            # the session's request, for the messages after this one: not this message's id
            request = self.session.asking(
                request._replace(version=version, capabilities=capabilities, message_id=None)
            )
        text = self.surface.essentials(self._runs_note(request, capabilities), told=True)
        return {
            "protocolVersion": version,
            "capabilities": {
                "tools": {"listChanged": False, "notifyProgress": False},
                # no subscriptions without a channel to send the updates on (stateless HTTP)
                "resources": {"listChanged": True, "subscribe": not self.stateless},
                "prompts": {"listChanged": True},
                "logging": {},
                "completions": {},
            },
            "serverInfo": dict(SERVER_INFO),
            "instructions": text,
        }

    def _runs_note(self, request: Request, capabilities: dict[str, Any]) -> str:
        """The asking person's open runs for the instructions; a client with roots names its
        workspace only once initialized (stateless HTTP is never asked for roots)."""
        roots = not self.stateless and "roots" in capabilities
        return self.service.open_runs_note(request, roots=roots)

    def _shutdown(self, request: Request, params: dict[str, Any]) -> None:
        self.shutdown_requested = True
        return None

    # -- the 2026-07-28 revision -------------------------------------------------------
    def _discover(self, request: Request, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "supportedVersions": list(MODERN_VERSIONS),
            "capabilities": {  # no list_changed notifications: this revision has no session to send them on
                "tools": {"listChanged": False},
                "resources": {"listChanged": False, "subscribe": False},
                "prompts": {"listChanged": False},
                "completions": {},
            },
            "instructions": self.surface.essentials("", told=False),
        }

    # -- ending ----------------------------------------------------------------------
    def interrupt(self) -> None:
        """The server is stopping: end what a request in hand may be waiting on (a
        check's processes, a client's answer), so that nothing is left behind."""
        self.client_requests.cancel_all()
        self.service.interrupt()

    def close(self) -> None:
        """Stop sending log records to this client (the transport is closing)."""
        self.session.connect(None)
        self.surface.close()


def _observed(
    method: str, handler: Handler, observer: Observer | None, tracer: Tracer | None, session: str | None
) -> Handler:
    """`handler`, timed and told to `observer`, in a span of `tracer`, with its tool and outcome;
    `session`: the span's `mcp.session.id`, None when the request is part of no session."""
    direct_tool = method if method in _TOOL_NAMES else ""  # the seed's direct form

    def answered(request: Request, params: dict[str, Any], tool: str, span: Span | None) -> Any:
        started = time.perf_counter()
        outcome = "error"
        try:
            result = handler(request, params)
            outcome = "tool_error" if tool and method == "tools/call" and _is_tool_error(result) else "ok"
            return result
        except RpcError as exc:
            if span is not None:
                span.set("rpc.response.status_code", str(exc.code))
                span.set("error.type", str(exc.code))
            raise
        except Exception as exc:
            if span is not None:
                span.set("error.type", type(exc).__qualname__)
            raise
        finally:
            if observer is not None:
                observer.request(method, tool, outcome, time.perf_counter() - started)
            if span is not None and outcome == "tool_error":
                span.set("error.type", "tool_error")

    def observed(request: Request, params: dict[str, Any]) -> Any:
        tool = direct_tool
        if method == "tools/call":
            name = params.get("name")
            tool = name if isinstance(name, str) and name in _TOOL_NAMES else "unknown"
        if tracer is None:  # metrics alone: no span to open
            return answered(request, params, tool, None)
        meta = params.get("_meta")
        meta = meta if isinstance(meta, dict) else None
        with tracer.request(method, tool, meta, request.message_id, session) as span:
            if request.version is not None:
                span.set("mcp.protocol.version", request.version)
            return answered(request, params, tool, span)

    return observed


def _is_tool_error(result: Any) -> bool:
    """A tools/call result that reports the tool's error (`isError`, its last member)."""
    if type(result) is Encoded:
        return result.data.endswith(b'"isError":true}')
    return isinstance(result, dict) and result.get("isError") is True


def _value(reply: Any) -> Any:
    """A response as a value to encode: bytes made by `_one` become `Encoded`."""
    return Encoded(reply) if type(reply) is bytes else reply


def _internal_error(rid: Any, method: str) -> dict[str, Any]:
    """The answer to a request that failed in a way nobody foresaw: logged in full under
    an id the client is given, nothing else about it shown."""
    error_id = os.urandom(6).hex()
    log.exception("internal error %s while handling %s", error_id, method)
    return error_response(rid, INTERNAL_ERROR, "Internal error", {"errorId": error_id})


def parse_error(exc: ValueError) -> dict[str, Any]:
    return error_response(None, PARSE_ERROR, "Parse error", {"details": str(exc)})


def valid_id(rid: Any) -> bool:
    """Whether `rid` can be a JSON-RPC request's id (a string or an integer, not a bool)."""
    return isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))
