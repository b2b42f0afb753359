"""What MCP offers one session beyond the lifecycle: tools, resources, prompts,
logging, completion, subscriptions and the requests the server sends the client
(roots/list here; elicitation/create for approvals, in tool_methods.py), as a method ->
handler table the protocol dispatches to (`methods` for the handshake era, `modern_methods` for 2026-07-28).
This is the one place a new tool family, resource or server-to-client request is
registered; the protocol keeps framing, lifecycle and version negotiation.

A `Surface` also keeps the session's own state here: its subscriptions, its log
level, and the catalog generation the client was last told about."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from handrail.codec import encode
from handrail.errors import INVALID_PARAMS, METHOD_NOT_FOUND, RpcError
from handrail.protocol.surface.completion import CompletionError, complete
from handrail.protocol.surface.logging_bridge import LEVELS, LogBridge
from handrail.protocol.surface.prompts import prompts_get, prompts_list
from handrail.protocol.surface.resources import resources_list, resources_read, subscribable, templates_list
from handrail.protocol.surface.subscriptions import Subscriptions
from handrail.protocol.surface.texts import instructions
from handrail.protocol.surface.tool_methods import tools_call, tools_list

if TYPE_CHECKING:
    from handrail.protocol.core import Protocol

Handler = Callable[[dict[str, Any]], Any]

RESOURCES_CHANGED = b'{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}'
PROMPTS_CHANGED = b'{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}'


class Surface:
    def __init__(self, session: Protocol) -> None:
        self.session = session
        self.service = session.service
        self.subscriptions = Subscriptions()
        self._log_bridge: LogBridge | None = None
        self._notify_lock = threading.Lock()
        self._seen_generation = -1

    def methods(self) -> dict[str, Handler]:
        """The handshake era's methods (2024-11-05 .. 2025-11-25)."""
        service = self.service
        return {
            "tools/list": lambda params: tools_list(service),
            "tools/call": self.tools_call,
            "resources/list": lambda params: resources_list(service),
            "resources/read": lambda params: resources_read(service, params),
            "resources/templates/list": lambda params: templates_list(),
            "prompts/list": lambda params: prompts_list(service),
            "prompts/get": lambda params: prompts_get(service, params),
            "logging/setLevel": self.set_level,
            "completion/complete": self.complete,
            "resources/subscribe": self.subscribe,
            "resources/unsubscribe": self.unsubscribe,
        }

    def modern_methods(self) -> dict[str, Handler]:
        """The 2026-07-28 revision's: no session, so no logging or subscriptions; an
        unknown resource is Invalid params there."""
        service = self.service
        return {
            "tools/list": lambda params: tools_list(service),
            "tools/call": self.tools_call,
            "resources/list": lambda params: resources_list(service),
            "resources/read": lambda params: resources_read(service, params, missing=INVALID_PARAMS),
            "resources/templates/list": lambda params: templates_list(),
            "prompts/list": lambda params: prompts_list(service),
            "prompts/get": lambda params: prompts_get(service, params),
            "completion/complete": self.complete,
        }

    def tools_call(self, params: dict[str, Any]) -> Any:
        session = self.session
        return tools_call(
            self.service,
            params,
            stateless=session.stateless,
            client_capabilities=session.client_capabilities,
            client_requests=session.client_requests,
        )

    # -- what the client is told about the workflows ---------------------------------
    def instructions(self, *, told: bool) -> str:
        """The server's instructions: the workflows, summarized before anything is compiled
        (see Catalog.summaries). `told`: the client now knows this catalog generation."""
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
        return instructions(listed, runs_only=self.service.runs_only)

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
        if session.stateless or "roots" not in session.client_capabilities:
            return  # stateless HTTP has no channel back to the client (a seam for later)
        session.client_requests.send("roots/list", None, self._got_roots)

    def _got_roots(self, result: Any, error: dict[str, Any] | None) -> None:
        roots = result.get("roots") if isinstance(result, dict) and error is None else None
        if isinstance(roots, list):
            self.service.set_client_roots([r.get("uri") for r in roots if isinstance(r, dict)])

    # -- logging, completion, subscriptions ---------------------------------------------
    def set_level(self, params: dict[str, Any]) -> dict[str, Any]:
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

    def complete(self, params: dict[str, Any]) -> dict[str, Any]:
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

    def subscribe(self, params: dict[str, Any]) -> dict[str, Any]:
        uri = self._subscribed_uri("resources/subscribe", params)
        self.subscriptions.subscribe(uri, subscribable(self.service, uri))
        return {}

    def unsubscribe(self, params: dict[str, Any]) -> dict[str, Any]:
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
