"""Requests from the server to the client (`roots/list` now; `elicitation/create` next).

JSON-RPC lets either side send requests. A `ClientRequests` belongs to one session:
`send` queues a request with a callback for its answer, the transport writes what
`take_outgoing` hands it after each message it handles, and the protocol passes
every response the client sends to `resolve`. Nothing here blocks: a caller that must
wait for an answer in the middle of its own request (elicitation, issue 16) needs
the transport to read on while it waits, which the stdio loop does not do yet.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("handrail.client_requests")

Callback = Callable[[Any, "dict[str, Any] | None"], None]  # (result, error)
MAX_PENDING = 64  # a client that never answers cannot make the server hoard callbacks


class ClientRequests:
    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._pending: dict[str, Callback] = {}
        self._outgoing: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def send(self, method: str, params: dict[str, Any] | None, on_answer: Callback) -> str:
        """Queue a request; `on_answer(result, error)` runs when the client answers."""
        rid = f"handrail-{next(self._ids)}"  # strings: never confused with the client's own ids
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        with self._lock:
            if len(self._pending) >= MAX_PENDING:
                self._pending.pop(next(iter(self._pending)))  # the oldest is given up
            self._pending[rid] = on_answer
            self._outgoing.append(message)
            del self._outgoing[:-MAX_PENDING]  # a transport that never sends keeps no backlog
        return rid

    def take_outgoing(self) -> list[dict[str, Any]]:
        with self._lock:
            out, self._outgoing = self._outgoing, []
        return out

    def resolve(self, message: dict[str, Any]) -> bool:
        """Hand a response from the client to its request's callback. False when it
        answers nothing we asked (it is then ignored, as before)."""
        rid = message.get("id")
        with self._lock:
            callback = self._pending.pop(rid, None) if isinstance(rid, str) else None
        if callback is None:
            return False
        error = message.get("error")
        try:
            callback(message.get("result"), error if isinstance(error, dict) else None)
        except Exception:
            log.exception("the answer to %s could not be used", rid)
        return True
