"""Requests from the server to the client (`roots/list` now; `elicitation/create` next).

JSON-RPC lets either side send requests. A `ClientRequests` belongs to one session:
`send` queues a request with a callback for its answer, the transport writes what
`take_outgoing` hands it after each message it handles, and the protocol passes
every response the client sends to `resolve`.

`ask` is the blocking form, for a request that must be answered in the middle of the
server's own answer (elicitation/create while answering workflow_continue): it writes
the request through the transport's `sender` at once and waits. The stdio transport
reads on its own thread and, while somebody waits, hands each response line to
`route` instead of queueing it behind the request in hand.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from typing import Any

from handrail.model.codec import decode, encode
from handrail.observe.logs import Log

log = Log("handrail.protocol.client_requests")  # logging loads with the first record

Callback = Callable[[Any, "dict[str, Any] | None"], None]  # (result, error)
MAX_PENDING = 64  # a client that never answers cannot make the server hoard callbacks


class ClientRequests:
    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._pending: dict[str, Callback] = {}
        self._outgoing: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        # requests `ask` waits on; the transport looks (`if requests.awaited`) before it
        # routes a line it read, without a call per line
        self.awaited: dict[str, threading.Event] = {}
        # writes one encoded message to the client at once; set by a transport that can
        # carry a request back while a request is being answered (stdio)
        self.sender: Callable[[bytes], None] | None = None

    def send_through(self, sender: Callable[[bytes], None] | None) -> None:
        """The transport's way to the client, for requests sent while one is answered."""
        self.sender = sender

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

    def ask(self, method: str, params: dict[str, Any] | None, timeout: float) -> Any:
        """Send a request now and wait for its answer: the result, or None on an error
        answer, a timeout, no channel (`sender` unset) or the server stopping."""
        sender = self.sender
        if sender is None:
            return None
        done = threading.Event()
        answer: list[Any] = [None]

        def on_answer(result: Any, error: dict[str, Any] | None) -> None:
            answer[0] = None if error is not None else result
            done.set()

        # a random id: an answer written before the request was seen cannot name it
        rid = f"handrail-{next(self._ids)}-{os.urandom(8).hex()}"  # as secrets.token_hex(8)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        with self._lock:
            self._pending[rid] = on_answer
            self.awaited[rid] = done
        try:
            sender(encode(message))
            if not done.wait(timeout):
                log.warning("no answer to %s %s within %g s", method, rid, timeout)
            return answer[0]
        except (OSError, ValueError):  # the channel closed under us
            return None
        finally:
            with self._lock:
                self._pending.pop(rid, None)
                self.awaited.pop(rid, None)

    def route(self, line: bytes) -> bool:
        """A line read while somebody waits: True when it was the answer they wait for
        (it has been handed over); False for anything else, to be queued as usual."""
        if b'"method"' in line:
            return False
        try:
            message = decode(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or message.get("id") not in self.awaited:
            return False
        return self.resolve(message)

    def cancel_all(self) -> None:
        """The server is stopping: whoever waits stops waiting (with no answer)."""
        with self._lock:
            waiting = list(self.awaited.values())
        for done in waiting:
            done.set()

    def take_outgoing(self) -> list[dict[str, Any]]:
        if not self._outgoing:  # the usual answer, after every burst: no lock needed to see it
            return []
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
