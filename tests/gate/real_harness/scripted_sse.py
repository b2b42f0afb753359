"""What the scripted model servers share: an HTTP server on 127.0.0.1 that records
every request a harness sends and answers each from a script the test wrote.

A script is a list of turns, each a function of the request the harness sent (so a
turn can read what it is answering, e.g. a tool's result). The model's own requests
(`is_turn`) take the next turn; a harness's side requests (titles, summaries, routing)
are answered by `side`, so the script stays the agent's conversation only. A request
that finds the script used up is answered with an error and recorded as one, and the
test fails on it: the harness asked for more than the test expected. A turn whose body
repeats the previous turn's exactly is the harness retrying (a slow answer on a loaded
machine): it gets the same answer again and takes no turn of the script.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Turn = Callable[["Request"], Any]


@dataclass
class Request:
    method: str
    path: str
    body: Any
    turn: bool = False  # answered from the script
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Reply:
    status: int
    content_type: str
    chunks: Iterable[bytes]


class ScriptedModel:
    """Subclasses say which requests are the agent's turns and how a turn's value
    is written on the wire (`reply`), and answer the side requests (`side`)."""

    def __init__(self, turns: list[Turn] | None = None) -> None:
        self.turns: list[Turn] = list(turns or [])
        self.requests: list[Request] = []
        self.errors: list[str] = []
        self._last: tuple[Any, Any] | None = None  # the previous turn's body and the value it got
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                model._handle(self, "GET")

            def do_POST(self) -> None:
                model._handle(self, "POST")

            def log_message(self, format: str, *args: Any) -> None:  # quiet: the test reads .requests
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def script(self, *turns: Turn) -> None:
        with self._lock:
            self.turns.extend(turns)

    def agent_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.turn]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- for subclasses ------------------------------------------------------------
    def is_turn(self, request: Request) -> bool:
        raise NotImplementedError

    def reply(self, request: Request, value: Any) -> Reply:
        raise NotImplementedError

    def side(self, request: Request) -> Reply:
        raise NotImplementedError

    # -- the wire -----------------------------------------------------------------
    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        request = Request(
            method, handler.path, body, headers={k.lower(): v for k, v in handler.headers.items()}
        )
        try:
            request.turn = self.is_turn(request)
            with self._lock:
                self.requests.append(request)
                retried = request.turn and self._last is not None and self._last[0] == body
                turn = self.turns.pop(0) if request.turn and self.turns and not retried else None
                exhausted = request.turn and turn is None and not retried
                self._changed.notify_all()
            if retried and self._last is not None:
                reply = self.reply(request, self._last[1])
            elif exhausted:
                self.errors.append(f"the script is used up: {method} {handler.path}")
                # a client error, which harnesses do not retry
                reply = Reply(400, "application/json", [b'{"error": {"message": "the script is used up"}}'])
            elif turn is not None:
                value = turn(request)
                with self._lock:
                    self._last = (body, value)
                reply = self.reply(request, value)
            else:
                reply = self.side(request)
        except Exception as exc:  # the test reads it from .errors: a harness sees a 500
            self.errors.append(f"{method} {handler.path}: {type(exc).__name__}: {exc}")
            reply = Reply(500, "application/json", [json.dumps({"error": {"message": str(exc)}}).encode()])
        handler.send_response(reply.status)
        handler.send_header("Content-Type", reply.content_type)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for chunk in reply.chunks:
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()


def sse(events: Iterable[tuple[str | None, Any]]) -> list[bytes]:
    """Server-sent events, one chunk each: `event: NAME` (when named) and `data: JSON`."""
    chunks = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        chunks.append(f"{head}data: {json.dumps(data)}\n\n".encode())
    return chunks
