"""`handrail start` stops promptly on SIGTERM or the end of its input, even while a
request runs (a test-only hook makes `workflow_get` of `slow-<seconds>` busy that long):
the request in hand gets --shutdown-timeout seconds, then the server leaves, exit 0."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.server import LATEST, clean_env
from tests.helpers.slow import PROGRAM

pytestmark = pytest.mark.slow

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": LATEST, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def line(message: object) -> bytes:
    return json.dumps(message).encode() + b"\n"


def start(
    tmp_path: Path, *requests: object, grace: str = "1", unbuffered: bool = False
) -> subprocess.Popen[bytes]:
    env = clean_env(tmp_path)
    env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen(
        [*PROGRAM, "start", "--shutdown-timeout", grace],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(line(r) for r in (INITIALIZE, *requests)))
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    return proc


SLOW_GET = {"jsonrpc": "2.0", "id": 2, "method": "workflow_get", "params": {"id": "slow-60"}}


@pytest.mark.parametrize("how", ["sigterm", "end of input"])
def test_the_server_leaves_within_its_shutdown_timeout_while_a_request_runs(tmp_path: Path, how: str) -> None:
    proc = start(tmp_path, SLOW_GET)
    time.sleep(0.5)  # the slow request is in hand
    started = time.monotonic()
    if how == "sigterm":
        proc.send_signal(signal.SIGTERM)
    else:
        assert proc.stdin is not None
        proc.stdin.close()
    try:
        assert proc.wait(15) == 0
    finally:
        proc.kill()
        proc.wait()
    assert time.monotonic() - started < 15  # not the 60 s the request would take


def test_a_quick_request_in_hand_is_still_answered_at_the_end_of_input(tmp_path: Path) -> None:
    slow = {"jsonrpc": "2.0", "id": 2, "method": "workflow_get", "params": {"id": "slow-1"}}
    proc = start(tmp_path, slow, grace="10")
    out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert json.loads(out) == {"jsonrpc": "2.0", "id": 2, "result": {"slow": True}}
    assert b"Fatal Python error" not in err


def test_every_line_sent_before_the_end_of_input_is_answered_beyond_the_grace_period(tmp_path: Path) -> None:
    # `printf requests | handrail start`: the input ends at once, but the client still
    # wants every answer; the grace period is for the last request only
    slow = [
        {"jsonrpc": "2.0", "id": n, "method": "workflow_get", "params": {"id": "slow-0.6"}} for n in (2, 3, 4)
    ]
    proc = start(tmp_path, *slow, grace="0.3")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert [json.loads(answer)["id"] for answer in out.splitlines()] == [2, 3, 4]


def test_lines_sent_while_a_request_runs_are_answered_after_it_in_order(tmp_path: Path) -> None:
    # more lines than the server reads ahead while busy, all in one write, then the end of input
    pings = [{"jsonrpc": "2.0", "id": n, "method": "ping"} for n in range(10, 40)]
    slow = {"jsonrpc": "2.0", "id": 2, "method": "workflow_get", "params": {"id": "slow-1"}}
    proc = start(tmp_path, slow, *pings, grace="5")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    answers = [json.loads(answer) for answer in out.splitlines()]
    assert [a["id"] for a in answers] == [2, *range(10, 40)]
    assert answers[0]["result"] == {"slow": True} and all(a["result"] == {} for a in answers[1:])


@pytest.mark.parametrize("unbuffered", [False, True])
def test_an_answer_before_a_long_request_goes_out_while_it_runs(tmp_path: Path, unbuffered: bool) -> None:
    # a quick request and a long one in one write: the quick answer must not wait for the
    # long one (answers are flushed before waiting, and when a request runs long), with or
    # without the PYTHONUNBUFFERED that client settings often give a Python server
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    slow = {**SLOW_GET, "id": 3}
    proc = start(tmp_path, ping, slow, unbuffered=unbuffered)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 10)  # the long request takes 60 s
        assert ready, "the quick answer waited for the long request"
        assert json.loads(proc.stdout.readline()) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    finally:
        proc.kill()
        proc.wait()


def test_the_first_answers_of_a_long_burst_go_out_before_the_burst_is_done(tmp_path: Path) -> None:
    # 160 requests of 30 ms each (under the watcher's tick) in one write: 4.8 s of work at
    # the least, however fast the machine, and answers that all fit in the server's output
    # buffer. SIGTERM is sent once the first answer is read: the server then takes no
    # further line, so fewer answers than requests come out only if the first went out
    # before the burst was done (a server holding them until the end, or until its buffer
    # filled, would already have answered every one)
    burst = [
        {"jsonrpc": "2.0", "id": n, "method": "workflow_get", "params": {"id": "slow-3e-2"}}
        for n in range(2, 162)
    ]
    proc = start(tmp_path, *burst, grace="5")
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)  # only a hung server takes this long
        assert ready, "no answer of the burst came out"
        assert json.loads(proc.stdout.readline()) == {"jsonrpc": "2.0", "id": 2, "result": {"slow": True}}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0  # the answers left fit in the pipe: it never waits on us
        rest = proc.stdout.read()  # with what the first readline buffered
    finally:
        proc.kill()
        proc.wait()
    answered = [json.loads(answer)["id"] for answer in rest.splitlines()]
    assert answered == list(range(3, 3 + len(answered))) and len(answered) < len(burst) - 1
