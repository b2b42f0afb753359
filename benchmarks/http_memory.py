"""The resident memory of `handrail serve` under kept-alive HTTP clients (issue 37,
"HTTP holds every answered request for 10 s"): N clients send workflow_next back to
back for S seconds, and the server's resident set (VmRSS) is read from /proc at the
start of the load and at its end. The baseline, in the same run and on the same
load, is the same server with the header timer armed as it was before: a new timer
after every answer, the previous one left to run out, each holding its request.

    python -m benchmarks.http_memory [--quick] [--seconds 15] [--clients 8]

Exits 1 when handrail's growth under load is over BUDGET (its resident set at the
end against at the start), which an answered request held 10 s makes it."""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from benchmarks.http_keepalive import ARGS, measure_once
from benchmarks.saving import save
from tests.helpers.http import HttpServer

RESULTS = Path(__file__).resolve().parent / "results"
BUDGET = 1.25  # handrail's resident set at the end of the load, at most, over its start's

# `handrail serve` with the header timer as it was: a timer per answer, never cancelled.
TIMER_PER_ANSWER = """
import sys

from handrail.transport.uvicorn_parts import HeaderTimeoutProtocol

HeaderTimeoutProtocol._disarm = lambda self: None
from handrail.cli import main
raise SystemExit(main(sys.argv[1:]))
"""
CONFIGS = ("handrail serve", "a timer per answer (baseline)")


def resident_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def measure(seconds: float, clients: int) -> dict[str, Any]:
    found: dict[str, dict[str, Any]] = {}
    with ExitStack() as stack:
        servers = {
            CONFIGS[0]: stack.enter_context(HttpServer(*ARGS)),
            CONFIGS[1]: stack.enter_context(
                HttpServer(*ARGS, program=(sys.executable, "-c", TIMER_PER_ANSWER))
            ),
        }
        for config, server in servers.items():
            measure_once(server.port, clients, 1.0)  # warm up: imports, caches, connections
            start = resident_kb(server.proc.pid)
            began = time.perf_counter()
            loaded = measure_once(server.port, clients, seconds)
            end = resident_kb(server.proc.pid)
            found[config] = {
                "start_kb": start,
                "end_kb": end,
                "growth": end / start,
                "requests": round(loaded.per_second * (time.perf_counter() - began)),
                "per_second": loaded.per_second,
            }
    return {"seconds": seconds, "clients": clients, "servers": found}


def report(results: dict[str, Any]) -> str:
    lines = [
        f"`handrail serve` under {results['clients']} kept-alive clients sending workflow_next for "
        f"{results['seconds']:g} s, resident set (VmRSS) at the load's start and end:",
        "",
        "| server | requests | start MB | end MB | end / start |",
        "|---|---|---|---|---|",
        *(
            f"| {config} | {m['requests']} | {m['start_kb'] / 1024:.1f} | {m['end_kb'] / 1024:.1f} "
            f"| {m['growth']:.2f}x |"
            for config, m in results["servers"].items()
        ),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smoke run: short")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    results = measure(2.0 if args.quick else args.seconds, args.clients)
    save(args.out, "http-memory-quick" if args.quick else "http-memory", results, report(results))
    return 0 if args.quick or results["servers"][CONFIGS[0]]["growth"] <= BUDGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
