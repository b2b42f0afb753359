"""Other clients' latency over HTTP while one request is slow.

Spawns `handrail serve` with the test-only hook of tests/helpers/slow.py (a
`workflow_get` of `slow-<seconds>` keeps the CPU busy that long, holding the
interpreter as a costly request does), measures `workflow_next` from a second client
with nothing else running, then again during a `--slow`-second slow request (and
/healthz alike), and prints p50, p99 and the worst. `--baseline COMMIT` runs the same
against an earlier commit's source, in the same run, for the ratio.

    .venv/bin/python -m benchmarks.slow_request
    .venv/bin/python -m benchmarks.slow_request --slow 10 --baseline 0cb3754
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.many_files import baseline_source, server_env, stop
from benchmarks.timing import percentile
from tests.helpers.http import free_port
from tests.helpers.slow import PROGRAM

ROOT = Path(__file__).resolve().parents[1]
NEXT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "workflow_next",
    "params": {"workflowId": "coding-task", "completedSteps": []},
}


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "p50_ms": round(percentile(ordered, 50) * 1000, 2),
        "p99_ms": round(percentile(ordered, 99) * 1000, 2),
        "max_ms": round(ordered[-1] * 1000, 2),
    }


def _timed(client: httpx.Client, url: str, body: Any = None) -> float:
    started = time.perf_counter()
    if body is None:
        response = client.get(url)
    else:
        response = client.post(url, json=body, headers={"Accept": "application/json"})
    assert response.status_code == 200, response.text
    return time.perf_counter() - started


def measure(source: Path, slow: float, home: Path) -> dict[str, Any]:
    port = free_port()
    proc = subprocess.Popen(
        [*PROGRAM, "serve", "--port", str(port)],
        cwd=home,
        env=server_env(source, home),
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(timeout=slow + 60) as client:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if client.get(f"{base}/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.05)
            quiet = [_timed(client, f"{base}/mcp", NEXT) for _ in range(300)]
            done = threading.Event()

            def slow_request() -> None:
                with httpx.Client(timeout=slow + 60) as other:
                    message = {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "workflow_get",
                        "params": {"id": f"slow-{slow:g}"},
                    }
                    other.post(f"{base}/mcp", json=message, headers={"Accept": "application/json"})
                done.set()

            started = time.monotonic()
            threading.Thread(target=slow_request, daemon=True).start()
            time.sleep(0.2)
            during, health = [], []
            while not done.is_set() and time.monotonic() - started < slow - 0.5:
                during.append(_timed(client, f"{base}/mcp", NEXT))
                health.append(_timed(client, f"{base}/healthz"))
            done.wait(slow + 60)
        return {
            "quiet": _summary(quiet),
            "during_slow_request": _summary(during),
            "healthz_during": _summary(health),
            "slow_request_s": round(time.monotonic() - started, 2),
        }
    finally:
        stop(proc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--slow", type=float, default=10.0, help="seconds the slow request takes")
    parser.add_argument("--baseline", metavar="COMMIT", help="also measure this earlier commit")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="handrail-slow-"))
    try:
        runs = {"this tree": ROOT / "src"}
        if args.baseline:
            (work / "baseline").mkdir()
            runs[f"baseline {args.baseline}"] = baseline_source(args.baseline, work / "baseline")
        results = {}
        for name, source in runs.items():
            results[name] = measure(source, args.slow, work)
            print(f"{name}: {json.dumps(results[name])}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
