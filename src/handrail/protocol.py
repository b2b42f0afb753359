"""JSON-RPC 2.0 and the MCP lifecycle: framing rules, version negotiation,
dispatch and error mapping. No I/O: bytes in, bytes out, for any transport.
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
from handrail.errors import HandrailError
from handrail.service import Encoded, Service

log = logging.getLogger("handrail.protocol")

KNOWN_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST = KNOWN_VERSIONS[-1]
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
_MISSING = object()


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


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
    if _float_id(message):
        # orjson reads an integer past 64 bits as a float (an id 2**70 would come back
        # as 1.1805916207174113e+21); the standard library keeps it exact. Only ids are
        # checked: scanning every line for long digit runs costs more than the request.
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


def negotiate(requested: str) -> str | None:
    if requested in KNOWN_VERSIONS:
        return requested
    if DATE.match(requested) and requested > LATEST:
        return LATEST
    return None


class Protocol:
    """One client session. `handle(line)` returns the bytes to send back, or None."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.initialized = False
        self.version: str | None = None
        self.shutdown_requested = False
        self._seen_generation = -1
        self.client_ready = False  # set by notifications/initialized
        self._notify_lock = threading.Lock()
        self._methods: dict[str, Callable[[dict[str, Any]], Any]] = {
            "initialize": self._initialize,
            "ping": lambda params: {},
            "shutdown": self._shutdown,
            "tools/list": lambda params: {"tools": list(_published_tools())},
            "tools/call": self._tools_call,
            "resources/list": self._resources_list,
            "resources/read": self._resources_read,
            "resources/templates/list": lambda params: {"resourceTemplates": []},
        }

    # -- framing -------------------------------------------------------------------
    def handle(self, data: bytes | str) -> bytes | None:
        try:
            message = decode(data)
        except ValueError as exc:
            return encode(_error(None, PARSE_ERROR, "Parse error", {"details": str(exc)}))
        if isinstance(message, list):
            if not message:
                return encode(_error(None, INVALID_REQUEST, "Invalid Request", {"details": "empty batch"}))
            replies = [r for r in (self._one(m) for m in message) if r is not None]
            return encode(replies) if replies else None
        reply = self._one(message)
        return encode(reply) if reply is not None else None

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
            return [encode({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})]

    def _one(self, message: Any) -> dict[str, Any] | None:
        if not isinstance(message, dict):
            return _error(None, INVALID_REQUEST, "Invalid Request", {"details": "a message is a JSON object"})
        rid = message.get("id", _MISSING)
        is_notification = rid is _MISSING
        if not is_notification and not _valid_id(rid):
            return _error(
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
                else _error(
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
                return None
            return _error(
                reply_id, INVALID_REQUEST, "Invalid Request", {"details": "method must be a string"}
            )
        if is_notification:
            if method == "notifications/initialized" and self.initialized:
                self.client_ready = True
            return None  # notifications/initialized, cancelled, ...: no response, ever
        params = message.get("params", {})
        if params is None:
            params = {}
        try:
            if not isinstance(params, dict):
                raise RpcError(INVALID_PARAMS, "Invalid params", {"details": "params must be an object"})
            return {"jsonrpc": "2.0", "id": rid, "result": self._dispatch(method, params)}
        except RpcError as exc:
            return _error(rid, exc.code, exc.message, exc.data)
        except HandrailError as exc:
            return _error(rid, exc.code, exc.message, exc.data)
        except Exception:
            error_id = os.urandom(6).hex()
            log.exception("internal error %s while handling %s", error_id, method)
            return _error(rid, INTERNAL_ERROR, "Internal error", {"errorId": error_id})

    # -- dispatch ------------------------------------------------------------------
    def _dispatch(self, method: str, params: dict[str, Any]) -> Any:
        if not self.initialized and method not in ("initialize", "ping"):
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
        catalog = self.service.catalog
        snapshot = catalog.ready
        listed: list[Any]
        if snapshot is None:  # answer before compiling anything: see Catalog.summaries
            listed = list(catalog.summaries())
        else:
            listed = snapshot.workflows
            with self._notify_lock:
                self._seen_generation = snapshot.generation
        return {
            "protocolVersion": version,
            "capabilities": {
                "tools": {"listChanged": False, "notifyProgress": False},
                "resources": {"listChanged": True, "subscribe": False},
            },
            "serverInfo": dict(SERVER_INFO),
            "instructions": instructions(listed),
        }

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
                else f"unknown tool {name[:100]!r}"
            )
            raise RpcError(
                INVALID_PARAMS, "Invalid params", {"details": details, "tools": list(_tool_names())}
            )
        arguments = params.get("arguments", {})
        try:
            result = self.service.call(name, arguments)
        except HandrailError as exc:
            error = {"code": exc.code, "message": exc.message, "data": exc.data}
            return {
                "content": [{"type": "text", "text": _fix_text(name, exc)}],
                "structuredContent": error,
                "isError": True,
            }
        return {
            "content": [{"type": "text", "text": encode(result).decode()}],
            "structuredContent": result,
            "isError": False,
        }

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
            for w in snapshot.workflows
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

    def _resources_read(self, params: dict[str, Any]) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str) or not uri.startswith("workflow://"):
            raise RpcError(
                INVALID_PARAMS,
                "Invalid params",
                {"details": "uri must be workflow://<id> or workflow://schema"},
            )
        name = uri[len("workflow://") :]
        if name == "schema":
            text, mime = (
                encode(self.service.call("workflow_get_schema", {})).decode(),
                "application/schema+json",
            )
        else:
            snapshot = self.service.catalog.snapshot()
            if snapshot.get(name) is None:
                raise RpcError(-32002, "Resource not found", {"uri": uri})
            text, mime = self.service.workflow(snapshot, name).document.decode(), "application/json"
        return {"contents": [{"uri": uri, "mimeType": mime, "text": text}]}


def _valid_id(rid: Any) -> bool:
    return isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))


def _error(rid: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": error}


def _published_tools() -> tuple[dict[str, Any], ...]:
    from handrail.tooldefs import tools

    return tools()


def _tool_names() -> tuple[str, ...]:
    from handrail.tooldefs import tool_names

    return tool_names()


def _fix_text(tool: str, exc: HandrailError) -> str:
    """What a model reads when its call failed: the error and how to correct the call."""
    data = exc.data or {}
    text = f"{tool} failed: {exc.message} (code {exc.code})."
    if "details" in data:
        text += f" {data['details']}."
    if exc.code == -32001:
        close = data.get("didYouMean")
        text += f" No workflow has the id {data.get('workflowId')!r}."
        text += f" Did you mean {', '.join(close)}?" if close else " Call workflow_list to see the ids."
    elif exc.code == -32003:
        text += f" Step {data.get('stepId')!r} is not in the workflow; call workflow_get to see its steps."
    elif exc.code == -32005:
        text += " Send back the completedSteps and state of the previous workflow_next result unchanged."
    elif exc.code == -32602:
        text += " Check the tool's inputSchema and call again."
    return text


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
