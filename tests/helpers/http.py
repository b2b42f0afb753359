"""Drive a real `handrail serve` process over HTTP.

`HttpServer` spawns `python -m handrail serve --host 127.0.0.1 --port <free port>`
in a private, empty working folder (also its HOME, with the workflow environment
variables removed), waits until /healthz answers, and offers raw httpx calls.
`close()` stops the process (SIGTERM, then kill if it hangs) and removes the folder.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from tests.helpers.server import clean_env

TIMEOUT = 15.0
MODERN = "2026-07-28"
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
NAME_BEARING = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def envelope(version: str = MODERN, **extra: Any) -> dict[str, Any]:
    """The `_meta` of a 2026-07-28 request."""
    return {
        PROTOCOL_VERSION_KEY: version,
        CLIENT_CAPABILITIES_KEY: {},
        CLIENT_INFO_KEY: {"name": "handrail-tests", "version": "1"},
        **extra,
    }


def modern_request(method: str, params: dict[str, Any] | None = None, *, rid: Any = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": method,
        "params": {**(params or {}), "_meta": envelope()},
    }


def modern_headers(message: dict[str, Any]) -> dict[str, str]:
    """The routing headers a 2026-07-28 client sends with `message`."""
    params = message.get("params") or {}
    headers = {
        "MCP-Protocol-Version": params["_meta"][PROTOCOL_VERSION_KEY],
        "Mcp-Method": message["method"],
    }
    key = NAME_BEARING.get(message["method"])
    if key is not None and isinstance(params.get(key), str):
        headers["Mcp-Name"] = params[key]
    return headers


class HttpServer:
    """One `handrail serve` process on 127.0.0.1 and a free port."""

    def __init__(
        self, *args: str, env: dict[str, str] | None = None, program: Sequence[str] | None = None
    ) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="handrail-http-"))
        self.args = list(args)
        self.program = list(program or (sys.executable, "-m", "handrail"))  # e.g. `python -c HOOKS+main`
        self._log = (self.folder / "stderr.log").open("wb")
        self.client = httpx.Client(timeout=TIMEOUT)
        try:
            self._start(env or {})
        except BaseException:
            self.close()
            raise

    def _start(self, env: dict[str, str]) -> None:
        for _ in range(3):  # a free port can be taken between finding and binding it
            self.port = free_port()
            self.base = f"http://127.0.0.1:{self.port}"
            self.url = f"{self.base}/mcp"
            self.proc = subprocess.Popen(
                [*self.program, "serve", "--port", str(self.port), *self.args],
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=self._log,
                cwd=self.folder,
                env=clean_env(self.folder) | env,
            )
            deadline = time.monotonic() + TIMEOUT
            while self.proc.poll() is None and time.monotonic() < deadline:
                with contextlib.suppress(httpx.TransportError):
                    if self.client.get(f"{self.base}/healthz").status_code == 200:
                        return
                time.sleep(0.05)
            if self.proc.poll() is None:
                raise AssertionError(f"handrail serve did not come up in {TIMEOUT}s:\n{self.stderr}")
        raise AssertionError(f"handrail serve kept failing to start:\n{self.stderr}")

    @property
    def stderr(self) -> str:
        self._log.flush()
        return (self.folder / "stderr.log").read_text("utf-8", "replace")

    # -- requests ------------------------------------------------------------------
    def post(self, body: Any, headers: dict[str, str] | None = None, *, raw: bool = False) -> httpx.Response:
        """POST `body` (JSON, or bytes as they are with raw=True) to /mcp."""
        sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        sent.update(headers or {})
        if raw:
            return self.client.post(self.url, content=body, headers=sent)
        return self.client.post(self.url, json=body, headers=sent)

    def rpc(
        self, method: str, params: Any = None, *, rid: Any = 1, headers: dict[str, str] | None = None
    ) -> Any:
        """One JSON-RPC request; the decoded response body (a result or an error)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        response = self.post(message, headers)
        assert response.headers["content-type"].startswith("application/json"), response
        return response.json()

    def modern(self, method: str, params: dict[str, Any] | None = None, *, rid: Any = 1) -> httpx.Response:
        """One 2026-07-28 request with its envelope and routing headers."""
        message = modern_request(method, params, rid=rid)
        return self.post(message, modern_headers(message))

    # -- the process ---------------------------------------------------------------
    def close(self) -> int | None:
        code = None
        try:
            self.client.close()
            proc = getattr(self, "proc", None)
            if proc is not None:
                proc.terminate()
                try:
                    code = proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    code = proc.wait(5)
        finally:
            self._log.close()
            shutil.rmtree(self.folder, ignore_errors=True)
        return code

    def __enter__(self) -> HttpServer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
