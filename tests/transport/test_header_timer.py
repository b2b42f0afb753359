"""The header timeout of `handrail serve` keeps one timer per connection: a kept-alive
connection's answered requests are let go, not held until their timers run out."""

from __future__ import annotations

from typing import Any

from tests.conftest import ROOT
from tests.helpers.http import HttpServer
from tests.helpers.live_timers import PROGRAM

ARGS = ("--no-bundled", "--workflows", str(ROOT / "workflows"))
REQUESTS = 300


def live(server: HttpServer) -> dict[str, Any]:
    reply = server.rpc("workflow_get", {"id": "live-timers"})
    counts: dict[str, Any] = reply["result"]
    return counts


def test_many_requests_on_one_connection_leave_one_timer_and_no_answered_requests() -> None:
    with HttpServer(*ARGS, program=PROGRAM) as server:
        for _ in range(REQUESTS):  # one httpx client: one kept-alive connection
            assert server.client.get(f"{server.base}/healthz").status_code == 200
        counts = live(server)
    # The /healthz answers and this request's connection: a timer each at most, and
    # the request being answered, never one per answered request.
    assert counts["timers"] <= 2, counts
    assert counts["requests"] <= 2, counts
