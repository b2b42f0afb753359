"""A webhook receiver for the notification tests: a real HTTP server on 127.0.0.1 that
keeps every POST it is sent (path, headers, body), in arrival order. `status` is what
it answers; `stop()` closes its socket (senders then meet a refused connection) and
`start()` opens it again on the same port."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class Receiver:
    def __init__(self, port: int = 0) -> None:
        self.received: list[Received] = []
        self.status = 200
        self.delay = 0.0  # seconds each answer waits (a slow receiver)
        self._lock = threading.Lock()
        self.port = port
        self._server: ThreadingHTTPServer | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True  # the body, sent after the headers, is not held back

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with outer._lock:
                    outer.received.append(
                        Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    status, delay = outer.status, outer.delay
                time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                except OSError:  # the sender was killed while waiting: what a receiver sees
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def wait_for(self, count: int, timeout: float = 20.0, path: str | None = None) -> list[Received]:
        """The first `count` requests (to `path`, if given), once that many have arrived."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                got = [r for r in self.received if path is None or r.path == path]
            if len(got) >= count or time.monotonic() > deadline:
                assert len(got) >= count, (
                    f"{len(got)} of {count} notifications arrived: {[r.body for r in got]}"
                )
                return got[:count]
            time.sleep(0.05)

    def __enter__(self) -> Receiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
