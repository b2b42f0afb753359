"""Drive a real `handrail start` process through its pipes: the one driver the tests
use for raw JSON lines to a server (the MCP SDK client tests use the SDK's).

`Server` spawns `python -m handrail start ...` in a private, empty working folder
(also its HOME, with the workflow environment variables and the tester's HANDRAIL_*
removed), so the catalog is exactly what the test passes with --workflows and the
store is the test's. A thread reads stdout line by
line and checks every line as it arrives: each must be one UTF-8 JSON-RPC message
from a server, ending in a newline. Another thread collects stderr. `close()`
ends the process (EOF, then kill if it hangs) and removes the folder.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.helpers.environment import child_env

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 10.0
LATEST = "2025-11-25"
# a client's first message, as one line on a server's stdin (2025-06-18, as most clients)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
_EOF = object()

# Run before `handrail start` when a Server is made with faults=True: workflow_get
# misbehaves for ids starting with `fault-`, so the tests can reach error paths
# no real workflow can (every error class, an unexpected crash, a stray print).
FAULTS = """
from handrail.model import errors
from handrail.service.core import Service

_original = Service.workflow_get
_ERRORS = {
    cls.code: cls
    for cls in (
        errors.WorkflowNotFound, errors.StepNotFound,
        errors.ValidationEngineError, errors.StateError, errors.StorageError,
        errors.SecurityError,
    )
}


def workflow_get(self, snapshot, args):
    wid = args["id"]
    if wid.startswith("fault-code-"):
        code = -int(wid.rsplit("-", 1)[1])
        raise _ERRORS[code](data={"injected": wid})
    if wid == "fault-crash":
        raise RuntimeError("injected secret detail")
    if wid == "fault-print":
        print("a stray print from inside a tool")
        return {"printed": True}
    return _original(self, snapshot, args)


Service.workflow_get = workflow_get
"""

# what the server may ask a client (see handrail/protocol/client_requests.py): its roots, when it
# offers them, and a person's approval, when it declared elicitation
SERVER_REQUESTS = {"roots/list", "elicitation/create"}
_MAIN = "import sys\nfrom handrail.cli import main\nraise SystemExit(main(sys.argv[1:]))\n"


def check_message(message: Any) -> None:
    """Raise AssertionError unless `message` is what a server may send: a response,
    a notification, or (for a batch) a non-empty array of responses."""
    if isinstance(message, list):
        assert message, "an empty array is no message"
        for item in message:
            assert isinstance(item, dict) and "method" not in item, f"batch replies are responses: {item!r}"
            check_message(item)
        return
    assert isinstance(message, dict), f"not a JSON object: {message!r}"
    assert message.get("jsonrpc") == "2.0", f"jsonrpc is not '2.0': {message!r}"
    if "method" in message:
        assert isinstance(message["method"], str), message
        if "id" in message:  # a request the server makes of its client
            assert message["method"] in SERVER_REQUESTS, f"the server sends no such request: {message!r}"
            assert isinstance(message["id"], str), message
            assert set(message) <= {"jsonrpc", "id", "method", "params"}, message
            return
        assert set(message) <= {"jsonrpc", "method", "params"}, message
        return
    assert "id" in message, f"a response carries an id: {message!r}"
    rid = message["id"]
    assert rid is None or isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)), (
        message
    )
    assert ("result" in message) != ("error" in message), f"exactly one of result/error: {message!r}"
    assert set(message) == {"jsonrpc", "id", "result" if "result" in message else "error"}, message
    if "error" in message:
        error = message["error"]
        assert isinstance(error, dict), message
        assert isinstance(error.get("code"), int) and not isinstance(error["code"], bool), message
        assert isinstance(error.get("message"), str) and error["message"], message
        assert set(error) <= {"code", "message", "data"}, message
    else:
        assert rid is not None, f"a result answers a request with an id: {message!r}"


def clean_env(home: Path) -> dict[str, str]:
    """The environment of a child working in `home`: see tests/helpers/environment.py."""
    env = child_env(home)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), env.get("PYTHONPATH")) if p)
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def command(args: Sequence[str], *, faults: bool = False) -> list[str]:
    if faults:
        return [sys.executable, "-c", FAULTS + _MAIN, "start", *args]
    return [sys.executable, "-m", "handrail", "start", *args]


class Server:
    """One `handrail start` process. Lines in with `send`, messages out with `recv`."""

    def __init__(
        self, *args: str, faults: bool = False, preexec_fn: Callable[[], None] | None = None
    ) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="handrail-proto-"))
        self.args = list(args)
        self.lines: list[bytes] = []  # every stdout line, as received
        self.violations: list[str] = []  # stdout lines that are no JSON-RPC message
        self.notifications: list[dict[str, Any]] = []  # skipped over by `request`
        self.initialized: dict[str, Any] | None = None  # the initialize result, once initialized
        self._stderr = bytearray()
        self._queue: queue.Queue[Any] = queue.Queue()
        self._next_id = 1000
        self.proc = subprocess.Popen(
            command(self.args, faults=faults),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=self.folder,
            env=clean_env(self.folder),
            preexec_fn=preexec_fn,  # e.g. a resource limit, set in the child only
        )
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # -- the pipes -----------------------------------------------------------------
    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            self.lines.append(raw)
            try:
                assert raw.endswith(b"\n"), "a message line ends with a newline"
                message = json.loads(raw.decode("utf-8"))
                check_message(message)
            except (AssertionError, ValueError) as exc:
                self.violations.append(f"{raw[:300]!r}: {exc}")
                self._queue.put(exc)
                continue
            self._queue.put(message)
        self._queue.put(_EOF)

    def _read_stderr(self) -> None:
        stream = self.proc.stderr
        assert isinstance(stream, io.BufferedReader)
        for chunk in iter(lambda: stream.read1(65536), b""):
            self._stderr.extend(chunk)

    @property
    def stderr(self) -> str:
        return self._stderr.decode("utf-8", "replace")

    def stderr_has(self, text: str, timeout: float = TIMEOUT) -> bool:
        """Whether `text` reaches stderr within `timeout` (stderr is read by a thread)."""
        deadline = time.monotonic() + timeout
        while text not in self.stderr:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (add the newline yourself)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, *messages: Any) -> None:
        """Each message as one JSON line (written together, so they arrive pipelined)."""
        self.send_raw(b"".join(json.dumps(m, ensure_ascii=False).encode() + b"\n" for m in messages))

    def recv(self, timeout: float = TIMEOUT) -> Any:
        """The next stdout message (already checked to be a JSON-RPC message)."""
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no reply within {timeout}s; stderr:\n{self.stderr[-2000:]}") from None
        if item is _EOF:
            self._queue.put(_EOF)
            raise EOFError(
                f"the server closed stdout (exit {self.proc.poll()}); stderr:\n{self.stderr[-2000:]}"
            )
        if isinstance(item, Exception):
            raise AssertionError(f"not a JSON-RPC message on stdout: {item}")
        return item

    def quiet(self) -> bool:
        """Whether nothing has arrived on stdout that `recv` has not yet returned."""
        return self._queue.empty()

    def at_eof(self, timeout: float = TIMEOUT) -> bool:
        """True once stdout closed with nothing further on it."""
        try:
            self.recv(timeout)
        except EOFError:
            return True
        return False

    # -- requests ------------------------------------------------------------------
    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def response(self, rid: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next response, setting aside the server's notifications on the way."""
        while True:
            message = self.recv(timeout)
            if isinstance(message, dict) and "method" in message:
                self.notifications.append(message)
                continue
            assert isinstance(message, dict), f"expected one response, got {message!r}"
            assert message["id"] == rid, f"expected the response to {rid!r}, got {message!r}"
            return message

    def request(self, method: str, params: Any = None, *, rid: Any = None) -> dict[str, Any]:
        """Send one request and return its whole response (result or error)."""
        rid = self.new_id() if rid is None else rid
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.response(rid)

    def result(self, method: str, params: Any = None) -> Any:
        reply = self.request(method, params)
        assert "result" in reply, f"{method} failed: {reply}"
        return reply["result"]

    def error(self, method: str, params: Any = None) -> dict[str, Any]:
        reply = self.request(method, params)
        assert "error" in reply, f"{method} was expected to fail: {reply}"
        error: dict[str, Any] = reply["error"]
        return error

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def initialize(self, version: str = LATEST, **extra: Any) -> dict[str, Any]:
        params = {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "handrail-tests", "version": "1"},
            **extra,
        }
        result: dict[str, Any] = self.result("initialize", params)
        self.notify("notifications/initialized")
        self.initialized = result
        return result

    def call(self, name: str, arguments: Any = None) -> dict[str, Any]:
        """tools/call; returns the CallToolResult."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        result: dict[str, Any] = self.result("tools/call", params)
        return result

    # -- the process ---------------------------------------------------------------
    def signal(self, signum: signal.Signals) -> None:
        self.proc.send_signal(signum)

    def close_stdin(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()

    def wait(self, timeout: float = TIMEOUT) -> int:
        """The exit status; fails the test if the process does not end in time."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the server did not exit within {timeout}s") from None

    def close(self) -> int:
        """End the process (EOF first, kill if it hangs), reap it, remove its folder."""
        try:
            self.close_stdin()
            try:
                code = self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                code = self.proc.wait(5)
            for thread in self._threads:
                thread.join(5)
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()
            return code
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> Server:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
        if kind is None:
            assert not self.violations, "stdout carried non-protocol lines:\n" + "\n".join(self.violations)
