"""`handrail serve` under slow requests and slow clients, as a real process.

A test-only hook makes `workflow_get` of `slow-<seconds>` burn the CPU that long
(holding the interpreter as a hostile workflow would), so these tests can show
that /healthz and other clients answer meanwhile, that a full pool says so, and
that SIGTERM ends the server within its shutdown timeout. Raw sockets play the
clients that send half a request or trickle a body.
"""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import ROOT
from tests.helpers.http import HttpServer
from tests.helpers.slow import PROGRAM

pytestmark = pytest.mark.slow

ARGS = ("--no-bundled", "--workflows", str(ROOT / "workflows"))  # the bundled files: no corpus needed
FIRST = "coding-task"
NEXT = {"name": "workflow_next", "arguments": {"workflowId": FIRST, "completedSteps": []}}


def slow_call(http: HttpServer, seconds: float) -> dict[str, Any]:
    """Start a slow request on its own client and thread; its outcome lands in the dict."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        with httpx.Client(timeout=seconds + 30) as client:
            message = {
                "jsonrpc": "2.0",
                "id": "slow",
                "method": "workflow_get",
                "params": {"id": f"slow-{seconds}"},
            }
            try:
                outcome["response"] = client.post(
                    http.url, json=message, headers={"Accept": "application/json"}
                )
            except httpx.HTTPError as exc:
                outcome["error"] = exc

    outcome["thread"] = threading.Thread(target=run, daemon=True)
    outcome["thread"].start()
    time.sleep(0.5)  # let it reach a worker
    return outcome


@pytest.fixture
def slow_server() -> Iterator[HttpServer]:
    with HttpServer(*ARGS, "--shutdown-timeout", "1", program=PROGRAM) as server:
        yield server


def test_health_and_other_clients_answer_while_a_slow_request_runs(slow_server: HttpServer) -> None:
    slow = slow_call(slow_server, 5)
    with httpx.Client(timeout=5) as other:  # far less than the slow request takes
        for _ in range(5):
            assert other.get(f"{slow_server.base}/healthz").json()["status"] == "ok"
            reply = other.post(
                slow_server.url,
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": NEXT},
                headers={"Accept": "application/json"},
            ).json()
            assert reply["result"]["structuredContent"]["step"]["id"] == "understand"
    assert slow["thread"].is_alive(), "the slow request should still be running"
    slow["thread"].join(30)
    assert slow["response"].json()["result"] == {"slow": True}


def test_a_full_pool_refuses_with_503_naming_the_limit() -> None:
    with HttpServer(*ARGS, "--workers", "1", "--max-queued", "0", program=PROGRAM) as http:
        slow = slow_call(http, 4)
        response = http.post({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert response.status_code == 503
        assert response.headers["retry-after"] == "1"
        error = response.json()["error"]
        assert error["data"] == {"limit": "maxQueuedRequests", "value": 1}
        assert http.client.get(f"{http.base}/healthz").status_code == 200  # health needs no worker
        slow["thread"].join(30)
        assert http.rpc("ping", rid=3) == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_sigterm_during_a_slow_request_ends_the_server_within_its_shutdown_timeout(
    slow_server: HttpServer,
) -> None:
    slow_call(slow_server, 60)
    started = time.monotonic()
    slow_server.proc.send_signal(signal.SIGTERM)
    assert slow_server.proc.wait(15) == 0
    assert time.monotonic() - started < 15


def half_sent(port: int, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: appl")  # never finished
        sockets.append(sock)
    return sockets


def test_1100_half_sent_requests_neither_stop_new_clients_nor_stay_open() -> None:
    with HttpServer(*ARGS, "--header-timeout", "2", "--max-connections", "2000") as http:
        sockets = half_sent(http.port, 1100)
        try:
            assert http.client.get(f"{http.base}/healthz").status_code == 200
            assert http.rpc("ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}
            sockets[0].settimeout(15)
            assert sockets[0].recv(100) == b"", "the server closes a connection that never sent its headers"
        finally:
            for sock in sockets:
                sock.close()


def test_a_trickled_body_gets_408_and_does_not_hold_up_sigterm() -> None:
    with HttpServer(*ARGS, "--body-timeout", "1", "--shutdown-timeout", "1") as http:
        sock = socket.create_connection(("127.0.0.1", http.port), timeout=15)
        body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body) + body[:5]
        )
        answer = sock.recv(4096)
        while b"}}" not in answer and (chunk := sock.recv(4096)):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b'"limit":"bodyTimeout"' in answer
        sock2 = socket.create_connection(("127.0.0.1", http.port), timeout=15)
        sock2.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body) + body[:5]
        )
        time.sleep(0.2)
        started = time.monotonic()
        http.proc.send_signal(signal.SIGTERM)
        for _ in range(5):  # still trickling while the server stops
            time.sleep(0.2)
            try:
                sock2.sendall(b" ")
            except OSError:
                break
        assert http.proc.wait(15) == 0
        assert time.monotonic() - started < 15
        sock.close()
        sock2.close()


@pytest.mark.parametrize(
    "headers",
    [
        [("Host", "evil.com")],
        [("Host", "[::1]evil.com")],
        [("Host", "localhost:evil")],
        [("Host", "localhost"), ("Host", "evil.com")],
        [("Host", "localhost"), ("Host", "localhost")],
    ],
)
def test_healthz_and_mcp_refuse_a_bad_or_repeated_host(headers: list[tuple[str, str]]) -> None:
    refused = (400, 403)  # h11 itself refuses a repeated Host with 400; we refuse the rest with 403
    assert raw_status(HEALTH_PORT[0], "GET", "/healthz", headers) in refused
    assert raw_status(HEALTH_PORT[0], "POST", "/mcp", headers) in refused


@pytest.mark.parametrize(
    "origins", [["http://localhost", "http://evil.com"], ["http://evil.com"], ["http://localhost"] * 2]
)
def test_repeated_or_bad_origin_headers_are_refused(origins: list[str]) -> None:
    headers = [("Host", "localhost"), *(("Origin", origin) for origin in origins)]
    assert raw_status(HEALTH_PORT[0], "POST", "/mcp", headers) == 403


def test_one_good_host_and_origin_are_served() -> None:
    headers = [("Host", "[::1]:8080"), ("Origin", "http://localhost:3000")]
    assert raw_status(HEALTH_PORT[0], "POST", "/mcp", headers) == 200
    assert raw_status(HEALTH_PORT[0], "GET", "/healthz", headers[:1]) == 200


HEALTH_PORT: list[int] = []


@pytest.fixture(scope="module", autouse=True)
def plain_server() -> Iterator[None]:
    with HttpServer(*ARGS) as http:
        HEALTH_PORT[:] = [http.port]
        yield


def raw_status(port: int, method: str, path: str, headers: list[tuple[str, str]]) -> int:
    """Send exactly these headers (httpx would merge or fix repeated ones)."""
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}' if method == "POST" else b""
    lines = [f"{method} {path} HTTP/1.1", *(f"{k}: {v}" for k, v in headers), "Connection: close"]
    if body:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        sock.sendall("\r\n".join(lines).encode() + b"\r\n\r\n" + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1])
