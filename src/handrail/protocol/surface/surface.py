"""What MCP offers one session beyond the lifecycle: tools, resources, prompts,
logging, completion, subscriptions and the requests the server sends the client
(roots/list here; elicitation/create for approvals, in approvals.py), as a method ->
handler table the protocol merges into its own (`handlers`): each handler takes the
request (handrail.model.request) and the params. This is the one place a new tool family,
resource or server-to-client request is registered; the protocol keeps framing,
lifecycle and version negotiation.

A `Surface` also keeps the session's own state here: its subscriptions, its log
level, and the catalog generation the client was last told about."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from handrail.model.codec import encode
from handrail.model.errors import INVALID_PARAMS, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND, RpcError
from handrail.model.request import Request
from handrail.protocol.session import Session
from handrail.protocol.surface.subscriptions import Subscriptions
from handrail.protocol.surface.texts import GUIDE_URI, essentials, instructions, with_runs
from handrail.protocol.surface.tool_methods import tools_call, tools_list
from handrail.service.core import Service

if TYPE_CHECKING:
    from handrail.protocol.surface.logging_bridge import LogBridge

# The modules of the methods a client calls now and then (resources, prompts, completion,
# logging) are imported by their handlers, with their first call: `initialize` needs
# none of them. tools/call, the one called again and again, is imported here.

Handler = Callable[[Request, dict[str, Any]], Any]
# the methods only a session of the handshake era has (logging, subscriptions)
SESSION_METHODS = frozenset({"logging/setLevel", "resources/subscribe", "resources/unsubscribe"})

RESOURCES_CHANGED = b'{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}'
PROMPTS_CHANGED = b'{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}'


class Surface:
    def __init__(self, session: Session, service: Service) -> None:
        self.session = session
        self.service = service
        self.subscriptions = Subscriptions()
        self._log_bridge: LogBridge | None = None
        self._notify_lock = threading.Lock()
        self._seen_generation = -1

    def handlers(self) -> dict[str, Handler]:
        """The surface's methods, for both eras; those in SESSION_METHODS only for the
        handshake era (2026-07-28 has no session)."""
        service = self.service
        return {
            "tools/list": lambda request, params: tools_list(service),
            "tools/call": self.tools_call,
            "resources/list": self.resources_list,
            "resources/read": self.read_resource,
            "resources/templates/list": self.templates_list,
            "prompts/list": self.prompts_list,
            "prompts/get": self.prompts_get,
            "completion/complete": self.complete,
            "logging/setLevel": self.set_level,
            "resources/subscribe": self.subscribe,
            "resources/unsubscribe": self.unsubscribe,
        }

    def tools_call(self, request: Request, params: dict[str, Any]) -> Any:
        return tools_call(self.service, request, params, self.session)

    def resources_list(self, request: Request, params: dict[str, Any]) -> dict[str, Any]:
        from handrail.protocol.surface.resources import resources_list  # lazy: see above

        return resources_list(self.service)

    def templates_list(self, request: Request, params: dict[str, Any]) -> dict[str, Any]:
        from handrail.protocol.surface.resources import templates_list  # lazy: see above

        return templates_list()

    def prompts_list(self, request: Request, params: dict[str, Any]) -> dict[str, Any]:
        from handrail.protocol.surface.prompts import prompts_list  # lazy: see above

        return prompts_list(self.service)

    def prompts_get(self, request: Request, params: dict[str, Any]) -> dict[str, Any]:
        from handrail.protocol.surface.prompts import prompts_get  # lazy: see above

        return prompts_get(self.service, params)

    # -- what the client is told about the workflows ---------------------------------
    def instructions(self, *, told: bool) -> str:
        """The server's instructions in full (the resource GUIDE_URI): the workflows,
        summarized before anything is compiled (see Catalog.summaries). `told`: the client
        now knows this catalog generation."""
        return instructions(self._listed(told), runs_only=self.service.runs_only)

    def essentials(self, runs_note: str, *, told: bool) -> str:
        """What `initialize` and `server/discover` give: the essentials, within 2,000
        characters, naming the resource that holds the whole text."""
        return essentials(self._listed(told), runs_note, runs_only=self.service.runs_only)

    def _listed(self, told: bool) -> list[Any]:
        catalog = self.service.catalog
        snapshot = catalog.ready
        listed: list[Any]
        if snapshot is None:
            listed = list(catalog.summaries())
            snapshot = catalog.ready  # what the client was told of: a later one is news
        else:
            listed = snapshot.workflows
        if told and snapshot is not None:
            with self._notify_lock:
                self._seen_generation = snapshot.generation
        return listed

    def read_resource(self, request: Request, params: dict[str, Any]) -> dict[str, Any]:
        """resources/read: the instructions in full (GUIDE_URI: named by the instructions, not
        listed, so that resources/list stays the catalog's), else a workflow's resource."""
        if params.get("uri") == GUIDE_URI:
            note = self.service.open_runs_note(request)
            text = with_runs(self.instructions(told=False), note)
            return {"contents": [{"uri": GUIDE_URI, "mimeType": "text/plain", "text": text}]}
        from handrail.protocol.surface.resources import resources_read  # lazy: see above

        return resources_read(self.service, params, INVALID_PARAMS if request.modern else RESOURCE_NOT_FOUND)

    def on_catalog_change(self, listener: Callable[[Any], None]) -> None:
        self.service.catalog.on_change(listener)

    def list_changed(self) -> list[bytes]:
        """Notifications owed to the client because the catalog changed since last asked.
        Called from the transport and from the catalog watcher's thread, hence the lock;
        nothing is owed before the client has said `notifications/initialized`."""
        ready = self.service.catalog.ready
        if ready is not None and ready.generation == self._seen_generation:
            return []  # the usual answer, after every line: known without the lock
        with self._notify_lock:
            snapshot = self.service.catalog.ready
            if snapshot is None or not self.session.client_ready:
                return []
            generation = snapshot.generation
            if self._seen_generation == -1:  # the first snapshot since initialize: nothing to tell
                self._seen_generation = generation
            if generation == self._seen_generation:
                return []
            self._seen_generation = generation
            # a prompt per workflow: both lists moved; then each subscribed resource that changed
            return [
                RESOURCES_CHANGED,
                PROMPTS_CHANGED,
                *map(_resource_updated, self.subscriptions.updated(snapshot)),
            ]

    # -- requests to the client ---------------------------------------------------------
    def ask_roots(self) -> None:
        """Ask a client that offers MCP roots for them: the first is the default workspace
        of its runs (spec/runs.md). The answer arrives later, through the protocol's `reply`."""
        session = self.session
        if session.stateless or "roots" not in session.request.capabilities:
            return  # stateless HTTP has no channel back to the client (a seam for later)
        session.client_requests.send("roots/list", None, self._got_roots)

    def _got_roots(self, result: Any, error: dict[str, Any] | None) -> None:
        """The first folder among the client's roots becomes the default workspace of the
        session's runs (stdio: one client per server)."""
        roots = result.get("roots") if isinstance(result, dict) and error is None else None
        if isinstance(roots, list):
            uris = [r.get("uri") for r in roots if isinstance(r, dict)]
            folder = next((p for p in map(_root_folder, uris) if p is not None), None)
            self.session.asking(self.session.request._replace(workspace=folder))

    # -- logging, completion, subscriptions ---------------------------------------------
    def set_level(self, request: Request, params: dict[str, Any]) -> dict[str, Any]:
        from handrail.protocol.surface.logging_bridge import LEVELS, LogBridge  # lazy: see above

        level = params.get("level")
        if level not in LEVELS:
            raise RpcError(
                INVALID_PARAMS,
                "Invalid params",
                {"details": f"level must be one of {', '.join(LEVELS)}", "levels": list(LEVELS)},
            )
        if self.session.sink is None:  # stateless HTTP: no stream to send records on, nothing to remember
            return {}
        if self._log_bridge is None:
            self._log_bridge = LogBridge(self._send_log)
        self._log_bridge.set_level(level)
        return {}

    def _send_log(self, params: dict[str, Any]) -> None:
        sink = self.session.sink
        if sink is not None:
            sink(encode({"jsonrpc": "2.0", "method": "notifications/message", "params": params}))

    def complete(self, request: Request, params: dict[str, Any]) -> dict[str, Any]:
        from handrail.protocol.surface.completion import CompletionError, complete  # lazy: see above

        try:
            return complete(params, list(self.service.catalog.snapshot().entries))
        except CompletionError as exc:
            raise RpcError(INVALID_PARAMS, "Invalid params", {"details": str(exc)}) from None

    def _subscribed_uri(self, method: str, params: dict[str, Any]) -> str:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise RpcError(INVALID_PARAMS, "Invalid params", {"details": "uri must be a string"})
        if self.session.sink is None:
            raise RpcError(
                METHOD_NOT_FOUND,
                "Method not found",
                {"method": method, "details": "subscriptions need a session: use stdio"},
            )
        return uri

    def subscribe(self, request: Request, params: dict[str, Any]) -> dict[str, Any]:
        uri = self._subscribed_uri("resources/subscribe", params)
        from handrail.protocol.surface.resources import subscribable  # lazy: see above

        self.subscriptions.subscribe(uri, subscribable(self.service, uri))
        return {}

    def unsubscribe(self, request: Request, params: dict[str, Any]) -> dict[str, Any]:
        uri = self._subscribed_uri("resources/unsubscribe", params)
        self.subscriptions.unsubscribe(uri)  # not subscribed: nothing to do
        return {}

    def close(self) -> None:
        """Stop sending log records to this client (the transport is closing)."""
        if self._log_bridge is not None:
            self._log_bridge.close()
            self._log_bridge = None


def _resource_updated(uri: str) -> bytes:
    return encode({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})


def _root_folder(uri: Any) -> str | None:
    """The local folder a `file://` root URI names, if it is one."""
    if not isinstance(uri, str) or not uri.startswith("file://"):
        return None
    from urllib.parse import unquote, urlparse  # only once roots arrive

    from handrail.runs.ledger import recordable  # only once roots arrive

    parsed = urlparse(uri)
    if parsed.netloc not in ("", "localhost"):
        return None
    path = os.path.normpath(unquote(parsed.path))
    return path if os.path.isabs(path) and recordable(path) and os.path.isdir(path) else None
