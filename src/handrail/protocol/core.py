"""JSON-RPC 2.0 and the MCP lifecycle: framing rules, version negotiation and
dispatch. No I/O: bytes in, bytes out, for any transport. What MCP offers beyond
the lifecycle (tools, resources, prompts, logging, completion, subscriptions) is
registered by handrail.protocol.surface into the method tables here.

Two eras of the protocol are served side by side, per request:

- the handshake era (2024-11-05 .. 2025-11-25): `initialize` first, then requests;
- the 2026-07-28 revision: no handshake; each request carries its protocol version
  and the client's capabilities in `params._meta` (the envelope), results carry
  `resultType` and, for listings, cache hints (`ttlMs`, `cacheScope`).

A request is served in the 2026 era exactly when its `_meta` holds the reserved
protocol-version key; anything else is answered as it always was.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from functools import partial
from typing import Any

from handrail.codec import Encoded, decode, encode
from handrail.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    SERVER_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    RpcError,
    error_response,
)
from handrail.limits import Limits
from handrail.protocol.client_requests import ClientRequests
from handrail.protocol.revisions import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    KNOWN_VERSIONS,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO,
    SERVER_INFO_KEY,
    negotiate,
)
from handrail.protocol.surface.surface import Handler, Surface
from handrail.protocol.surface.texts import with_runs
from handrail.service.core import Service
from handrail.service.definitions import tool_names

log = logging.getLogger("handrail.protocol.core")

_MISSING = object()

# How long (ms) a 2026-07-28 client may reuse a result, and whether shared caches may.
# The tool list changes only with the server's version; what the workflow catalog
# feeds changes when a workflow file does (the catalog looks twice a second), and a
# private deployment's workflows are nobody else's business.
STATIC_TTL_MS = 300_000
CATALOG_TTL_MS = 5_000
CACHE_HINTS: dict[str, tuple[int, str]] = {
    "server/discover": (CATALOG_TTL_MS, "private"),
    "tools/list": (STATIC_TTL_MS, "public"),
    "resources/templates/list": (STATIC_TTL_MS, "public"),
    "resources/list": (CATALOG_TTL_MS, "private"),
    "resources/read": (CATALOG_TTL_MS, "private"),
    "prompts/list": (CATALOG_TTL_MS, "private"),
}
_SERVER_STAMP = {SERVER_INFO_KEY: SERVER_INFO}  # `_meta` of every 2026 result (encoded, never mutated)
_BEFORE_INITIALIZE = frozenset({"initialize", "ping", "server/discover"})


class Protocol:
    """One client session. `handle(line)` returns the bytes to send back, or None."""

    def __init__(self, service: Service, *, stateless: bool = False) -> None:
        """`stateless`: every request stands alone (HTTP), so none waits for `initialize`."""
        self.service = service
        self.stateless = stateless
        self.initialized = stateless
        self.version: str | None = None
        self.shutdown_requested = False
        self.client_ready = False  # set by notifications/initialized
        self.client_capabilities: dict[str, Any] = {}  # as the client declared them in initialize
        self.client_requests = ClientRequests()  # server -> client requests (see protocol/client_requests.py)
        # Server-to-client messages sent outside a reply (log records): the transport sets
        # it when it has a channel for them; the stateless HTTP transport has none.
        self.sink: Callable[[bytes], None] | None = None
        self.surface = Surface(self)
        self._methods: dict[str, Handler] = {
            "initialize": self._initialize,
            "ping": lambda params: {},
            "shutdown": self._shutdown,
            "server/discover": lambda params: self._stamped("server/discover", self._discover(params)),
            **self.surface.methods(),
        }
        # The 2026-07-28 revision: no handshake, no ping, no shutdown, no seed-style methods.
        self._modern_methods: dict[str, Handler] = {
            "server/discover": self._discover,
            **self.surface.modern_methods(),
        }
        # what `_dispatch` finds for each method once the session is initialized, the
        # seed's direct forms included: the lane of the usual request (see `handle`)
        self._lanes: dict[str, Handler] = {
            **{name: partial(service.answer, name) for name in tool_names()},
            **self._methods,
        }

    @property
    def limits(self) -> Limits:
        return self.service.limits

    def on_catalog_change(self, listener: Callable[[Any], None]) -> None:
        """Call `listener` after each reload of the workflows (stdio: list_changed notes)."""
        self.surface.on_catalog_change(listener)

    def list_changed(self) -> list[bytes]:
        """Notifications owed to the client because the catalog changed (see Surface)."""
        return self.surface.list_changed()

    # -- framing -------------------------------------------------------------------
    def handle(self, data: bytes | str) -> bytes | None:
        try:
            message = decode(data)
        except ValueError as exc:
            return encode(parse_error(exc))
        if type(message) is dict and self.initialized:
            # the usual request, told in a few looks: a handshake-era request of an
            # initialized session with a proper envelope goes straight to its method;
            # anything else (and any doubt) takes the full path below
            rid = message.get("id")
            params = message.get("params")
            method = message.get("method")
            if (
                (type(rid) is int or type(rid) is str)
                and type(method) is str
                and type(params) is dict
                and "_meta" not in params
                and message.get("jsonrpc") == "2.0"
            ):
                handler = self._lanes.get(method)
                if handler is not None:
                    return self._lane(rid, method, handler, params)
        reply = self.reply(message)
        return encode(reply) if reply is not None else None

    def _lane(self, rid: int | str, method: str, handler: Handler, params: dict[str, Any]) -> bytes:
        """What `_one` answers for such a request, as bytes; a result already encoded is
        spliced into the reply as it is."""
        try:
            result = handler(params)
        except RpcError as exc:  # HandrailError included
            return encode(exc.response(rid))
        except Exception:
            return encode(_internal_error(rid, method))
        if type(result) is Encoded:
            return b'{"jsonrpc":"2.0","id":' + encode(rid) + b',"result":' + result.data + b"}"
        return encode({"jsonrpc": "2.0", "id": rid, "result": result})

    def reply(self, message: Any) -> Any:
        """The answer to one decoded message or batch: a response, a list of them, or None."""
        if isinstance(message, list):
            if not message:
                return error_response(None, INVALID_REQUEST, "Invalid Request", {"details": "empty batch"})
            replies = [r for r in (self._one(m) for m in message) if r is not None]
            return replies or None
        return self._one(message)

    def _one(self, message: Any) -> dict[str, Any] | None:
        if not isinstance(message, dict):
            return error_response(
                None, INVALID_REQUEST, "Invalid Request", {"details": "a message is a JSON object"}
            )
        rid = message.get("id", _MISSING)
        is_notification = rid is _MISSING
        if not is_notification and not valid_id(rid):
            return error_response(
                None,
                INVALID_REQUEST,
                "Invalid Request",
                {"details": "id must be a string or an integer"},
            )
        reply_id = None if is_notification else rid
        if message.get("jsonrpc") != "2.0":
            return (
                None
                if is_notification
                else error_response(
                    reply_id,
                    INVALID_REQUEST,
                    "Invalid Request",
                    {"details": 'jsonrpc must be "2.0"'},
                )
            )
        method = message.get("method")
        if not isinstance(method, str):
            if is_notification and ("result" in message or "error" in message):
                return None  # a response from the client; we send no requests, so ignore it
            if "result" in message or "error" in message:
                self.client_requests.resolve(message)  # the answer to one of our requests, if any
                return None
            return error_response(
                reply_id, INVALID_REQUEST, "Invalid Request", {"details": "method must be a string"}
            )
        if is_notification:
            if method == "notifications/initialized" and self.initialized:
                self.client_ready = True
                self.surface.ask_roots()
            elif method == "notifications/roots/list_changed" and self.client_ready:
                self.surface.ask_roots()
            return None  # notifications/initialized, cancelled, ...: no response, ever
        params = message.get("params", {})
        if params is None:
            params = {}
        try:
            if not isinstance(params, dict):
                raise RpcError(INVALID_PARAMS, "Invalid params", {"details": "params must be an object"})
            meta = params.get("_meta")  # the one look-up a handshake-era request pays for the 2026 era
            if (
                meta is not None
                and isinstance(meta, dict)
                and PROTOCOL_VERSION_KEY in meta
                and method != "initialize"
            ):
                return {"jsonrpc": "2.0", "id": rid, "result": self._modern(method, params, meta)}
            return {"jsonrpc": "2.0", "id": rid, "result": self._dispatch(method, params)}
        except RpcError as exc:  # HandrailError included
            return exc.response(rid)
        except Exception:
            return _internal_error(rid, method)

    # -- dispatch ------------------------------------------------------------------
    def _dispatch(self, method: str, params: dict[str, Any]) -> Any:
        if not self.initialized and method not in _BEFORE_INITIALIZE:
            raise RpcError(SERVER_ERROR, "Server not initialized", {"method": method})
        handler = self._methods.get(method)
        if handler is not None:
            return handler(params)
        if Service.knows(method):  # the seed's direct form: the tool name as the method
            return self.service.answer(method, params)
        raise RpcError(METHOD_NOT_FOUND, "Method not found", {"method": method})

    # -- lifecycle -----------------------------------------------------------------
    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
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
        self.client_capabilities = params["capabilities"]
        text = self.surface.instructions(told=True)
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
            "instructions": with_runs(text, self._runs_note()),
        }

    def _runs_note(self) -> str:
        """The open runs for the instructions; a client with roots names its workspace only
        once initialized (stateless HTTP is never asked for roots)."""
        roots = not self.stateless and "roots" in self.client_capabilities
        return self.service.open_runs_note(roots=roots)

    def _shutdown(self, params: dict[str, Any]) -> None:
        self.shutdown_requested = True
        return None

    # -- the 2026-07-28 revision -------------------------------------------------------
    def _modern(self, method: str, params: dict[str, Any], meta: dict[str, Any]) -> Any:
        """A request that carries its own envelope: check it, answer, stamp the result."""
        if CLIENT_CAPABILITIES_KEY not in meta:
            raise _bad_envelope(f"_meta is missing {CLIENT_CAPABILITIES_KEY}")
        requested = meta[PROTOCOL_VERSION_KEY]
        if not isinstance(requested, str):
            raise _bad_envelope(f"_meta {PROTOCOL_VERSION_KEY} must be a string")
        if requested not in MODERN_VERSIONS:
            raise RpcError(
                UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
                {"supported": list(MODERN_VERSIONS), "requested": requested},
            )
        if not isinstance(meta[CLIENT_CAPABILITIES_KEY], dict):
            raise _bad_envelope(f"_meta {CLIENT_CAPABILITIES_KEY} must be an object")
        info = meta.get(CLIENT_INFO_KEY)
        if info is not None and not isinstance(info, dict):
            raise _bad_envelope(f"_meta {CLIENT_INFO_KEY} must be an object")
        handler = self._modern_methods.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, "Method not found", {"method": method})
        return self._stamped(method, handler(params))

    @staticmethod
    def _stamped(method: str, result: Any) -> Any:
        """A 2026 result: `resultType`, the cache hints where the method has them, serverInfo."""
        stamps: dict[str, Any] = {}
        if type(result) is Encoded:  # a tool's answer as bytes: the stamps are spliced in after it
            stamps["resultType"] = "complete"
        else:
            result.setdefault("resultType", "complete")  # or input_required (an approval)
        hint = CACHE_HINTS.get(method)
        if hint is not None:
            stamps["ttlMs"], stamps["cacheScope"] = hint
        stamps["_meta"] = _SERVER_STAMP
        if type(result) is Encoded:
            return Encoded(result.data[:-1] + b"," + encode(stamps)[1:])
        result.update(stamps)
        return result

    def _discover(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "supportedVersions": list(MODERN_VERSIONS),
            "capabilities": {  # no list_changed notifications: this revision has no session to send them on
                "tools": {"listChanged": False},
                "resources": {"listChanged": False, "subscribe": False},
                "prompts": {"listChanged": False},
                "completions": {},
            },
            "instructions": self.surface.instructions(told=False),
        }

    # -- ending ----------------------------------------------------------------------
    def interrupt(self) -> None:
        """The server is stopping: end what a request in hand may be waiting on (a
        check's processes, a client's answer), so that nothing is left behind."""
        self.client_requests.cancel_all()
        import sys

        process = sys.modules.get("handrail.processes")  # loaded only once a program ran
        if process is not None:
            process.kill_running()

    def close(self) -> None:
        """Stop sending log records to this client (the transport is closing)."""
        self.sink = None
        self.surface.close()


def _internal_error(rid: Any, method: str) -> dict[str, Any]:
    """The answer to a request that failed in a way nobody foresaw: logged in full under
    an id the client is given, nothing else about it shown."""
    error_id = os.urandom(6).hex()
    log.exception("internal error %s while handling %s", error_id, method)
    return error_response(rid, INTERNAL_ERROR, "Internal error", {"errorId": error_id})


def _bad_envelope(details: str) -> RpcError:
    return RpcError(INVALID_PARAMS, "Invalid params", {"details": details})


def parse_error(exc: ValueError) -> dict[str, Any]:
    return error_response(None, PARSE_ERROR, "Parse error", {"details": str(exc)})


def valid_id(rid: Any) -> bool:
    """Whether `rid` can be a JSON-RPC request's id (a string or an integer, not a bool)."""
    return isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))
