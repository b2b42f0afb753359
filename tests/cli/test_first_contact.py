"""The commands explain themselves to someone trying them for the first time:
`handrail start` at a terminal, `handrail serve`'s address and a port in use, and a
`--workflows` path that does not exist."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from subprocess import Popen

import httpx
import pytest

from tests.helpers.server import Server, clean_env

pytestmark = pytest.mark.slow

TIMEOUT = 20.0


def _spawn(tmp_path: Path, *args: str, **streams: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "handrail", *args],
        cwd=tmp_path,
        env=clean_env(tmp_path),
        **streams,  # type: ignore[call-overload]
    )


def _read_until(fd: int, pattern: bytes, timeout: float = TIMEOUT) -> bytes:
    """What `fd` gave until `pattern` appeared in it (or the time ran out)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while pattern not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            seen += chunk
    return seen


@contextlib.contextmanager
def at_a_terminal(command: list[str], cwd: Path, env: dict[str, str]) -> Iterator[tuple[Popen[bytes], int]]:
    """`command` with a terminal for its stdin (its outputs are pipes), and that
    terminal's controlling end; Ctrl-D at the end must stop it with exit 0."""
    controller, terminal = pty.openpty()
    server = subprocess.Popen(
        command, stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env
    )
    os.close(terminal)
    try:
        yield server, controller
        os.write(controller, b"\x04")  # Ctrl-D: the end of the input
        assert server.wait(TIMEOUT) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        os.close(controller)


def test_start_at_a_terminal_says_what_it_is_on_stderr_then_serves(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "handrail", "start", "--no-bundled"]
    with at_a_terminal(command, tmp_path, clean_env(tmp_path)) as (server, controller):
        assert server.stderr is not None and server.stdout is not None
        notice = _read_until(server.stderr.fileno(), b"stops.").decode()
        assert "serving MCP over stdio" in notice
        assert "handrail walk" in notice and "handrail serve" in notice and "claude mcp add" in notice
        request = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        os.write(controller, json.dumps(request).encode() + b"\n")
        answer = _read_until(server.stdout.fileno(), b"\n")
        assert json.loads(answer) == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_start_through_a_pipe_prints_no_notice(tmp_path: Path) -> None:
    with Server("--no-bundled") as server:
        assert server.result("ping") == {}
        assert "serving MCP over stdio" not in server.stderr


def test_serve_prints_the_address_it_serves_at(tmp_path: Path) -> None:
    server = _spawn(tmp_path, "serve", "--port", "0", "--no-bundled", stderr=subprocess.PIPE)
    try:
        assert server.stderr is not None
        line = _read_until(server.stderr.fileno(), b"\n").decode()
        found = re.search(r"serving MCP at (http://127\.0\.0\.1:(\d+)/mcp)", line)
        assert found, line
        assert int(found.group(2)) > 0
        health = httpx.get(found.group(1).removesuffix("/mcp") + "/healthz", timeout=TIMEOUT)
        assert health.status_code == 200
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(TIMEOUT) == 0


def test_a_port_in_use_is_one_line_naming_it_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "handrail", "serve", "--port", str(port), "--no-bundled"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=clean_env(tmp_path),
            timeout=TIMEOUT,
        )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        f"handrail serve: port {port} on 127.0.0.1 is in use; choose another with --port\n"
    )


def test_a_missing_workflows_path_exits_2_and_is_listed_once(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "list", "--no-bundled", "--workflows", str(missing)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_env(tmp_path),
        timeout=TIMEOUT,
    )
    assert done.returncode == 2  # a path named on the command line must be there, as for `check`
    expected = (
        f"{missing}:1:1: warning H002 no such file or folder: {missing} "
        "(hint: check the path given to --workflows)"
    )
    assert done.stderr.count(expected) == 1  # on stderr, once; stdout is the listing
    assert "H002" not in done.stdout


def test_a_missing_workflows_path_is_logged_and_shown_by_workflow_list() -> None:
    missing = "/no/such/folder"
    with Server("--no-bundled", "--workflows", missing) as server:
        # said at once, before any client message
        assert server.stderr_has(f"handrail start: warning: --workflows {missing}: no such file or folder")
        server.initialize()
        listed = server.call("workflow_list")["structuredContent"]
        assert listed["workflows"] == []
        (diagnostic,) = listed["diagnostics"]
        assert diagnostic["code"] == "H002"
        assert diagnostic["severity"] == "warning"
        assert diagnostic["message"] == f"no such file or folder: {missing}"
        assert server.stderr_has(f"warning H002 no such file or folder: {missing}")
