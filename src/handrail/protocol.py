"""JSON-RPC 2.0 and the MCP lifecycle: framing rules, version negotiation,
dispatch and error mapping. No I/O: bytes in, bytes out, for any transport.

Two eras of the protocol are served side by side, per request:

- the handshake era (2024-11-05 .. 2025-11-25): `initialize` first, then requests;
- the 2026-07-28 revision: no handshake; each request carries its protocol version
  and the client's capabilities in `params._meta` (the envelope), results carry
  `resultType` and, for listings, cache hints (`ttlMs`, `cacheScope`).

A request is served in the 2026 era exactly when its `_meta` holds the reserved
protocol-version key; anything else is answered as it always was.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable
from typing import Any

from handrail import __version__
from handrail.client_requests import ClientRequests
from handrail.errors import HandrailError, RpcError, error_response
from handrail.mcp_surface.completion import TEMPLATES, CompletionError, complete
from handrail.mcp_surface.logging_bridge import LEVELS, LogBridge
from handrail.mcp_surface.subscriptions import Subscriptions
from handrail.service import Encoded, Service
from handrail.suggest import close_matches
from handrail.wide_integers import may_hold_wide_integers

log = logging.getLogger("handrail.protocol")

KNOWN_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")  # the handshake era
LATEST = KNOWN_VERSIONS[-1]
ELICITATION_TIMEOUT_S = 600.0  # how long a person has to answer an approval asked through the client
MODERN_VERSIONS = ("2026-07-28",)  # per-request envelope, no handshake
ALL_VERSIONS = KNOWN_VERSIONS + MODERN_VERSIONS
DATE = re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$")
SERVER_INFO = {
    "name": "workflowlookup",
    "version": __version__,
    "description": "handrail: step-by-step workflows for AI agents",
}

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)
SERVER_ERROR = -32000
HEADER_MISMATCH = -32020  # 2026-07-28: HTTP headers disagree with the body
UNSUPPORTED_PROTOCOL_VERSION = -32022  # 2026-07-28: data {supported, requested}
RESOURCE_NOT_FOUND = -32002  # an unknown resource, before 2026-07-28 (then -32602)
_MISSING = object()

# The reserved `_meta` keys of the 2026-07-28 revision.
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"

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


def encode(message: Any) -> bytes:
    import orjson

    try:
        return orjson.dumps(message, default=_spliced)
    except (TypeError, orjson.JSONEncodeError):  # huge integers, lone surrogates
        return json.dumps(
            message, ensure_ascii=True, separators=(",", ":"), default=lambda v: json.loads(v.data)
        ).encode()


def _spliced(value: Any) -> Any:
    """Results the service hands over already encoded are spliced in, not re-encoded."""
    import orjson

    if isinstance(value, Encoded):
        return orjson.Fragment(value.data)
    raise TypeError(f"cannot encode {type(value).__name__}")


def decode(data: bytes | str) -> Any:
    import orjson

    try:
        message = orjson.loads(data)
    except orjson.JSONDecodeError as first:
        try:  # the standard library takes what orjson refuses: escaped lone surrogates
            return _strict_loads(data)
        except RecursionError:
            raise ValueError("nested too deeply") from None
        except (ValueError, UnicodeDecodeError):
            raise ValueError(str(first)) from None
    if _float_id(message) or may_hold_wide_integers(message):
        # orjson reads an integer past 64 bits as a float (an id or a context value
        # 2**70 would come back as 1.1805916207174113e+21); the standard library keeps it
        # exact. Only messages holding a float that large are read again.
        try:
            return _strict_loads(data)
        except RecursionError:
            return message
    return message


def _float_id(message: Any) -> bool:
    if isinstance(message, dict):
        return type(message.get("id")) is float
    if isinstance(message, list):
        return any(isinstance(m, dict) and type(m.get("id")) is float for m in message)
    return False


def _strict_loads(data: bytes | str) -> Any:
    """The standard library, held to what orjson accepts: UTF-8 only, no NaN or Infinity."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    return json.loads(text, parse_constant=_no_constant)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def envelope(message: dict[str, Any]) -> dict[str, Any] | None:
    """The 2026-07-28 `_meta` envelope of a request, or None when it is a handshake-era one.
    `initialize` never is: that revision has no handshake, whatever the request carries."""
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    if isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta and message.get("method") != "initialize":
        return meta
    return None


def negotiate(requested: str) -> str | None:
    if requested in KNOWN_VERSIONS:
        return requested
    if DATE.match(requested) and requested > LATEST:
        return LATEST
    return None


class Protocol:
    """One client session. `handle(line)` returns the bytes to send back, or None."""

    def __init__(self, service: Service, *, stateless: bool = False) -> None:
        """`stateless`: every request stands alone (HTTP), so none waits for `initialize`."""
        self.service = service
        self.stateless = stateless
        self.initialized = stateless
        self.stateless = stateless
        self.version: str | None = None
        self.shutdown_requested = False
        self._seen_generation = -1
        self.client_ready = False  # set by notifications/initialized
        self.client_capabilities: dict[str, Any] = {}  # as the client declared them in initialize
        self.client_requests = ClientRequests()  # server -> client requests (see client_requests.py)
        self._notify_lock = threading.Lock()
        # Server-to-client messages sent outside a reply (log records): the transport sets
        # it when it has a channel for them; the stateless HTTP transport has none.
        self.sink: Callable[[bytes], None] | None = None
        self.subscriptions = Subscriptions()
        self._log_bridge: LogBridge | None = None
        self._methods: dict[str, Callable[[dict[str, Any]], Any]] = {
            "initialize": self._initialize,
            "ping": lambda params: {},
            "shutdown": self._shutdown,
            "tools/list": lambda params: {"tools": list(self.service.published_tools())},
            "tools/call": self._tools_call,
            "resources/list": self._resources_list,
            "resources/read": self._resources_read,
            "resources/templates/list": lambda params: {"resourceTemplates": list(TEMPLATES)},
            "prompts/list": self._prompts_list,
            "prompts/get": self._prompts_get,
            "server/discover": lambda params: self._stamped("server/discover", self._discover(params)),
            "logging/setLevel": self._set_level,
            "completion/complete": self._complete,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
        }
        # The 2026-07-28 revision: no handshake, no ping, no shutdown, no seed-style methods.
        self._modern_methods: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "server/discover": self._discover,
            "tools/list": lambda params: {"tools": list(self.service.published_tools())},
            "tools/call": self._tools_call,
            "resources/list": self._resources_list,
            "resources/read": lambda params: self._resources_read(params, missing=INVALID_PARAMS),
            "resources/templates/list": lambda params: {"resourceTemplates": list(TEMPLATES)},
            "prompts/list": self._prompts_list,
            "prompts/get": self._prompts_get,
            "completion/complete": self._complete,
        }

    # -- framing -------------------------------------------------------------------
    def handle(self, data: bytes | str) -> bytes | None:
        try:
            message = decode(data)
        except ValueError as exc:
            return encode(parse_error(exc))
        reply = self.reply(message)
        return encode(reply) if reply is not None else None

    def reply(self, message: Any) -> Any:
        """The answer to one decoded message or batch: a response, a list of them, or None."""
        if isinstance(message, list):
            if not message:
                return error_response(None, INVALID_REQUEST, "Invalid Request", {"details": "empty batch"})
            replies = [r for r in (self._one(m) for m in message) if r is not None]
            return replies or None
        return self._one(message)

    def list_changed(self) -> list[bytes]:
        """Notifications owed to the client because the catalog changed since last asked.
        Called from the stdio loop and from the catalog watcher's thread, hence the lock;
        nothing is owed before the client has said `notifications/initialized`."""
        with self._notify_lock:
            snapshot = self.service.catalog.ready
            if snapshot is None or not self.client_ready:
                return []
            generation = snapshot.generation
            if self._seen_generation == -1:  # the first snapshot since initialize: nothing to tell
                self._seen_generation = generation
            if generation == self._seen_generation:
                return []
            self._seen_generation = generation
            # a prompt per workflow: both lists moved; then each subscribed resource that changed
            return [
                _RESOURCES_CHANGED,
                _PROMPTS_CHANGED,
                *map(_resource_updated, self.subscriptions.updated(snapshot)),
            ]

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
                self._ask_roots()
            elif method == "notifications/roots/list_changed" and self.client_ready:
                self._ask_roots()
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
            error_id = os.urandom(6).hex()
            log.exception("internal error %s while handling %s", error_id, method)
            return error_response(rid, INTERNAL_ERROR, "Internal error", {"errorId": error_id})

    # -- dispatch ------------------------------------------------------------------
    def _dispatch(self, method: str, params: dict[str, Any]) -> Any:
        if not self.initialized and method not in _BEFORE_INITIALIZE:
            raise RpcError(SERVER_ERROR, "Server not initialized", {"method": method})
        handler = self._methods.get(method)
        if handler is not None:
            return handler(params)
        if Service.knows(method):  # the seed's direct form: the tool name as the method
            return self.service.call(method, params)
        raise RpcError(METHOD_NOT_FOUND, "Method not found", {"method": method})

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
        catalog = self.service.catalog
        snapshot = catalog.ready
        listed: list[Any]
        if snapshot is None:  # answer before compiling anything: see Catalog.summaries
            listed = list(catalog.summaries())
            snapshot = catalog.ready  # what the client was told of: a later one is news
        else:
            listed = snapshot.workflows
        if snapshot is not None:
            with self._notify_lock:
                self._seen_generation = snapshot.generation
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
            "instructions": _with_runs(instructions(listed), self.service.open_runs_note()),
        }

    # -- the 2026-07-28 revision -------------------------------------------------------
    def _modern(self, method: str, params: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
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
    def _stamped(method: str, result: dict[str, Any]) -> dict[str, Any]:
        """A 2026 result: `resultType`, the cache hints where the method has them, serverInfo."""
        result.setdefault("resultType", "complete")  # or input_required (an approval)
        hint = CACHE_HINTS.get(method)
        if hint is not None:
            result["ttlMs"], result["cacheScope"] = hint
        result["_meta"] = _SERVER_STAMP
        return result

    def _discover(self, params: dict[str, Any]) -> dict[str, Any]:
        catalog = self.service.catalog
        snapshot = catalog.ready
        listed: list[Any] = list(catalog.summaries()) if snapshot is None else snapshot.workflows
        return {
            "supportedVersions": list(MODERN_VERSIONS),
            "capabilities": {  # no list_changed notifications: this revision has no session to send them on
                "tools": {"listChanged": False},
                "resources": {"listChanged": False, "subscribe": False},
                "prompts": {"listChanged": False},
                "completions": {},
            },
            "instructions": instructions(listed),
        }

    def _prompt_text(self, workflow: Any) -> str:
        if self.service.runs_only:  # the classic stepping tools are off: follow it as a run
            from handrail.runs.tools import run_prompt_text

            return run_prompt_text(workflow)
        return prompt_text(workflow)

    def _ask_roots(self) -> None:
        """Ask a client that offers MCP roots for them: the first is the default workspace
        of its runs (spec/runs.md). The answer arrives later, through `reply`."""
        if self.stateless or "roots" not in self.client_capabilities:
            return  # stateless HTTP has no channel back to the client (a seam for later)
        self.client_requests.send("roots/list", None, self._got_roots)

    def _got_roots(self, result: Any, error: dict[str, Any] | None) -> None:
        roots = result.get("roots") if isinstance(result, dict) and error is None else None
        if isinstance(roots, list):
            self.service.set_client_roots([r.get("uri") for r in roots if isinstance(r, dict)])

    def _shutdown(self, params: dict[str, Any]) -> None:
        self.shutdown_requested = True
        return None

    def _tools_call(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name", _MISSING)
        if not isinstance(name, str) or not Service.knows(name):
            # never echo a non-string name: it may be huge, or nested past repr's limit
            details = (
                "name is required"
                if name is _MISSING
                else "name must be a string"
                if not isinstance(name, str)
                else f"unknown tool `{repr(name[:100])[1:-1]}`"
            )
            raise RpcError(
                INVALID_PARAMS, "Invalid params", {"details": details, "tools": list(_tool_names())}
            )
        arguments = params.get("arguments", {})
        approver = self._approver(params) if name == "workflow_continue" else None
        try:
            if approver is None:
                result = self.service.call(name, arguments)
            else:
                from handrail.runs.approvals import REQUEST_APPROVER, InputRequired

                token = REQUEST_APPROVER.set(approver)
                try:
                    result = self.service.call(name, arguments)
                except InputRequired as asked:  # 2026-07-28: the client asks the person, then retries
                    return asked.result()
                finally:
                    REQUEST_APPROVER.reset(token)
        except HandrailError as exc:
            error = {"code": exc.code, "message": exc.message, "data": exc.data}
            return {
                "content": [{"type": "text", "text": _fix_text(name, exc)}],
                "structuredContent": error,
                "isError": True,
            }
        return _tool_result(result)

    def _approver(self, params: dict[str, Any]) -> Any:
        """How this client can be asked to approve a step (spec/runs.md, "Approvals"), or None."""
        from handrail.runs.approvals import AnsweredOnRetry, AskedNow, local_person
        from handrail.runs.core import REQUEST_OWNER

        person = REQUEST_OWNER.get() or local_person()
        meta = params.get("_meta")
        if isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta:
            capabilities = meta.get(CLIENT_CAPABILITIES_KEY)
            if isinstance(capabilities, dict) and "elicitation" in capabilities:
                return AnsweredOnRetry(params.get("inputResponses"), person)
            return None
        if self.stateless or "elicitation" not in self.client_capabilities:
            return None
        if self.client_requests.sender is None:
            return None
        return AskedNow(self.client_requests.ask, person, ELICITATION_TIMEOUT_S)

    def _resources_list(self, params: dict[str, Any]) -> dict[str, Any]:
        snapshot = self.service.catalog.snapshot()
        resources = [
            {
                "uri": f"workflow://{w.id}",
                "name": w.id,
                "title": w.name,
                "description": w.description,
                "mimeType": "application/json",
            }
            for w in (() if self.service.runs_only else snapshot.workflows)  # --runs-only: no reading ahead
        ]
        resources.append(
            {
                "uri": "workflow://schema",
                "name": "schema",
                "title": "Workflow schema",
                "description": "The JSON Schema of workflow files",
                "mimeType": "application/schema+json",
            }
        )
        return {"resources": resources}

    def _resources_read(self, params: dict[str, Any], missing: int = RESOURCE_NOT_FOUND) -> dict[str, Any]:
        """`missing`: the code for an unknown workflow, RESOURCE_NOT_FOUND in the handshake era and
        -32602 (Invalid params) from 2026-07-28 on."""
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise RpcError(
                INVALID_PARAMS,
                "Invalid params",
                {"details": "uri must be workflow://<id> or workflow://schema"},
            )
        if not uri.startswith("workflow://"):  # a URI we do not serve is a resource we do not have
            raise RpcError(missing, "Resource not found", {"uri": uri})
        name = uri[len("workflow://") :]
        if name != "schema" and self.service.runs_only:
            from handrail.runs.tools import refuse_in_runs_only

            refuse_in_runs_only("workflow_get")  # a workflow's resource is its whole definition
        if name == "schema":
            text, mime = (
                encode(self.service.call("workflow_get_schema", {})).decode(),
                "application/schema+json",
            )
        else:
            snapshot = self.service.catalog.snapshot()
            if snapshot.get(name) is None:
                raise RpcError(missing, "Resource not found", {"uri": uri})
            text, mime = self.service.workflow(snapshot, name).document.decode(), "application/json"
        return {"contents": [{"uri": uri, "mimeType": mime, "text": text}]}

    # -- logging, completion, subscriptions (handrail.mcp_surface) ------------------------
    def _set_level(self, params: dict[str, Any]) -> dict[str, Any]:
        level = params.get("level")
        if level not in LEVELS:
            raise RpcError(
                INVALID_PARAMS,
                "Invalid params",
                {"details": f"level must be one of {', '.join(LEVELS)}", "levels": list(LEVELS)},
            )
        if self.sink is None:  # stateless HTTP: no stream to send records on, nothing to remember
            return {}
        if self._log_bridge is None:
            self._log_bridge = LogBridge(self._send_log)
        self._log_bridge.set_level(level)
        return {}

    def _send_log(self, params: dict[str, Any]) -> None:
        sink = self.sink
        if sink is not None:
            sink(encode({"jsonrpc": "2.0", "method": "notifications/message", "params": params}))

    def _complete(self, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return complete(params, list(self.service.catalog.snapshot().entries))
        except CompletionError as exc:
            raise RpcError(INVALID_PARAMS, "Invalid params", {"details": str(exc)}) from None

    def _subscribed_uri(self, method: str, params: dict[str, Any]) -> str:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise RpcError(INVALID_PARAMS, "Invalid params", {"details": "uri must be a string"})
        if self.sink is None:
            raise RpcError(
                METHOD_NOT_FOUND,
                "Method not found",
                {"method": method, "details": "subscriptions need a session: use stdio"},
            )
        return uri

    def _subscribe(self, params: dict[str, Any]) -> dict[str, Any]:
        uri = self._subscribed_uri("resources/subscribe", params)
        snapshot = self.service.catalog.snapshot()
        name = uri[len("workflow://") :] if uri.startswith("workflow://") else None
        if name is None or (name != "schema" and snapshot.get(name) is None):
            raise RpcError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})
        self.subscriptions.subscribe(uri, snapshot)
        return {}

    def _unsubscribe(self, params: dict[str, Any]) -> dict[str, Any]:
        uri = self._subscribed_uri("resources/unsubscribe", params)
        self.subscriptions.unsubscribe(uri)  # not subscribed: nothing to do
        return {}

    def interrupt(self) -> None:
        """The server is stopping: end what a request in hand may be waiting on (a
        check's processes, a client's answer), so that nothing is left behind."""
        self.client_requests.cancel_all()
        import sys

        process = sys.modules.get("handrail.checks.process")  # loaded only once a check ran
        if process is not None:
            process.kill_running()

    def close(self) -> None:
        """Stop sending log records to this client (the transport is closing)."""
        self.sink = None
        if self._log_bridge is not None:
            self._log_bridge.close()
            self._log_bridge = None

    # -- prompts: one per workflow -------------------------------------------------------
    def _prompts_list(self, params: dict[str, Any]) -> dict[str, Any]:
        snapshot = self.service.catalog.snapshot()
        return {
            "prompts": [
                {"name": w.id, "title": w.name, "description": w.description} for w in snapshot.workflows
            ]
        }

    def _prompts_get(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name", _MISSING)
        if not isinstance(name, str):
            details = "name is required" if name is _MISSING else "name must be a string"
            raise RpcError(INVALID_PARAMS, "Invalid params", {"details": details})
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, "Invalid params", {"details": "arguments must be an object"})
        snapshot = self.service.catalog.snapshot()
        workflow = snapshot.get(name)
        if workflow is None:
            data: dict[str, Any] = {"details": f"unknown prompt {name[:100]!r}"}
            close = close_matches(name, snapshot.entries)
            if close:
                data["didYouMean"] = close
            raise RpcError(INVALID_PARAMS, "Invalid params", data)
        return {
            "description": workflow.description,
            "messages": [
                {"role": "user", "content": {"type": "text", "text": self._prompt_text(workflow)}}
            ],
        }


_RESOURCES_CHANGED = b'{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}'
_PROMPTS_CHANGED = b'{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}'


def _resource_updated(uri: str) -> bytes:
    return encode({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})


def _bad_envelope(details: str) -> RpcError:
    return RpcError(INVALID_PARAMS, "Invalid params", {"details": details})


def parse_error(exc: ValueError) -> dict[str, Any]:
    return error_response(None, PARSE_ERROR, "Parse error", {"details": str(exc)})


def valid_id(rid: Any) -> bool:
    """Whether `rid` can be a JSON-RPC request's id (a string or an integer, not a bool)."""
    return isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))


def _published_tools() -> tuple[dict[str, Any], ...]:
    from handrail.tooldefs import tools

    return tools()


def _tool_names() -> tuple[str, ...]:
    from handrail.tooldefs import tool_names

    return tool_names()


def _tool_result(result: Any) -> dict[str, Any]:
    """A tool's answer as MCP sends it: the JSON once as structuredContent and once as the
    text of a text block (for clients that do not read structuredContent). Both are
    spliced in as bytes: the answer is encoded once and escaped into a string once."""
    encoded = result if isinstance(result, Encoded) else Encoded(encode(result))
    return {
        "content": [{"type": "text", "text": Encoded(encoded.quoted())}],
        "structuredContent": encoded,
        "isError": False,
    }


def _fix_text(tool: str, exc: HandrailError) -> str:
    """What a model reads when its call failed: the error and how to correct the call."""
    data = exc.data or {}
    text = f"{tool} failed: {exc.message} (code {exc.code})."
    if "details" in data:
        text += f" {data['details']}."
    return text + exc.fix()


def prompt_text(workflow: Any) -> str:
    """What the model reads when a user picks a workflow's prompt."""
    start = encode({"workflowId": workflow.id, "completedSteps": []}).decode()
    description = f"\n\n{workflow.description}" if workflow.description else ""
    return (
        f'Follow the workflow "{workflow.name}" ({workflow.id}) step by step.{description}\n\n'
        f"1. Call the workflow_next tool with {start}. It returns the first step to do.\n"
        "2. Do that step. Check what you produced with the workflow_validate tool "
        f'(workflowId "{workflow.id}", the step\'s id as stepId, your output as output, and your '
        "context) and fix what it reports before moving on.\n"
        "3. Call workflow_next again with the previous result's completedSteps plus the step's id, "
        "the result's state unchanged, and your context. Repeat from 2 until the result says "
        "isComplete is true."
    )


def _with_runs(text: str, runs_note: str) -> str:
    """The instructions, with the unfinished runs of the server's workspace first when
    there are any (see spec/runs.md)."""
    return f"{runs_note}\n\n{text}" if runs_note else text


def instructions(workflows: list[Any]) -> str:
    if not workflows:
        return (
            "No workflows configured.\n\n"
            "To add workflows, put workflow JSON files in ~/.handrail/workflows or ./workflows, "
            "or start the server with --workflows PATH. `handrail init` creates a sample."
        )
    blocks = []
    for w in workflows:
        description = w.description or "No description provided"
        blocks.append(f"{w.id} ({w.step_count} steps)\n  Description: {description}")
    return (
        "Available workflows:\n\n" + "\n\n".join(blocks) + "\n\n"
        "To follow a workflow, call workflow_next with its id as workflowId and an empty "
        "completedSteps list. Do the step it returns, check your output with "
        "workflow_validate, then call workflow_next again with the result's completedSteps "
        "plus that step's id, the result's state, and your context."
    )
