"""Kept-alive HTTP clients against `handrail serve`: N clients, each reusing one
http.client connection (as curl, Node's fetch and most SDKs do), sending
workflow_next calls back to back. The figures are requests per second and the
median latency, against a baseline measured in the same run and interleaved in
rounds: the same server with its listening socket made as it was before (protocol
0, so asyncio leaves TCP_NODELAY off and each answer waits for the client's
delayed ACK).

    python -m benchmarks.http_keepalive [--quick] [--seconds 3] [--rounds 3] [--clients 8]
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.saving import save
from tests.helpers.http import HttpServer

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
ARGS = ("--no-bundled", "--workflows", str(ROOT / "workflows"))  # the bundled files: no corpus needed
BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "workflow_next", "arguments": {"workflowId": "coding-task", "completedSteps": []}},
    }
).encode()
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
CONFIGS = ("TCP_NODELAY (handrail serve)", "without TCP_NODELAY (baseline)")

# `handrail serve` with the listening socket made without naming TCP, as it was before.
WITHOUT_NODELAY = """
import socket
import sys

import handrail.transport.http


def bind(host, port):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    return sock


handrail.transport.http.bind = bind
from handrail.cli import main
raise SystemExit(main(sys.argv[1:]))
"""
BASELINE_PROGRAM = (sys.executable, "-c", WITHOUT_NODELAY)


@dataclass
class Measured:
    per_second: float
    p50_ms: float
    connections: int  # connections the clients opened: one each when kept alive


def measure_once(port: int, clients: int, seconds: float) -> Measured:
    """`clients` threads, each on its own kept-alive connection, for `seconds` after a warm-up."""
    go, stop, measuring = threading.Barrier(clients + 1), threading.Event(), threading.Event()
    latencies: list[list[float]] = [[] for _ in range(clients)]
    opened = [0] * clients

    class Connection(http.client.HTTPConnection):
        """Counts how often it connects: a connection the server closed is opened again."""

        client = 0

        def connect(self) -> None:
            super().connect()
            opened[self.client] += 1

    def client(i: int) -> None:
        connection = Connection("127.0.0.1", port, timeout=60)
        connection.client = i
        try:
            go.wait(120)
            while not stop.is_set():
                began = time.perf_counter()
                connection.request("POST", "/mcp", BODY, HEADERS)
                response = connection.getresponse()
                answer = response.read()
                took = time.perf_counter() - began
                if response.status != 200 or b'"result"' not in answer:
                    raise RuntimeError(f"workflow_next failed: {response.status} {answer[:200]!r}")
                if measuring.is_set():
                    latencies[i].append(took * 1000)
        finally:
            connection.close()

    with ThreadPoolExecutor(clients) as pool:
        futures = [pool.submit(client, i) for i in range(clients)]
        go.wait(120)
        time.sleep(min(1.0, seconds / 4))  # warm up: connections, caches
        measuring.set()
        began = time.perf_counter()
        time.sleep(seconds)
        measuring.clear()
        ended = time.perf_counter()
        stop.set()
        for future in futures:
            future.result()
    every = [ms for one in latencies for ms in one]
    return Measured(
        per_second=len(every) / (ended - began),
        p50_ms=statistics.median(every) if every else float("nan"),
        connections=sum(opened),
    )


def measure(seconds: float, rounds: int, clients: int) -> dict[str, Any]:
    with ExitStack() as stack:
        servers = {
            CONFIGS[0]: stack.enter_context(HttpServer(*ARGS)),
            CONFIGS[1]: stack.enter_context(HttpServer(*ARGS, program=BASELINE_PROGRAM)),
        }
        per_round: dict[str, list[Measured]] = {config: [] for config in CONFIGS}
        for _ in range(rounds):
            for config in CONFIGS:
                per_round[config].append(measure_once(servers[config].port, clients, seconds))
    base = per_round[CONFIGS[1]]
    return {
        "seconds": seconds,
        "rounds": rounds,
        "clients": clients,
        "per_second": {c: statistics.median(m.per_second for m in ms) for c, ms in per_round.items()},
        "p50_ms": {c: statistics.median(m.p50_ms for m in ms) for c, ms in per_round.items()},
        "connections": {c: max(m.connections for m in ms) for c, ms in per_round.items()},
        "per_round": {c: [m.per_second for m in ms] for c, ms in per_round.items()},
        # each round against the baseline of the same round: the machine's load swings
        # between rounds more than between the two servers of one round
        "ratio_to_baseline": {
            c: statistics.median(m.per_second / b.per_second for m, b in zip(ms, base, strict=True))
            for c, ms in per_round.items()
        },
    }


def report(results: dict[str, Any]) -> str:
    lines = [
        f"workflow_next over HTTP, {results['clients']} kept-alive clients (one http.client connection "
        f"each), {results['seconds']:g} s a round, median of {results['rounds']} interleaved rounds "
        "(the ratio: median of each round's against the baseline's in that round):",
        "",
        "| server | requests / s | p50 ms | vs baseline |",
        "|---|---|---|---|",
        *(
            f"| {config} | {results['per_second'][config]:.0f} | {results['p50_ms'][config]:.1f} "
            f"| {results['ratio_to_baseline'][config]:.2f}x |"
            for config in CONFIGS
        ),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smoke run: short, one round")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    seconds, rounds = (0.5, 1) if args.quick else (args.seconds, args.rounds)
    results = measure(seconds, rounds, args.clients)
    name = "http-keepalive-quick" if args.quick else "http-keepalive"  # a smoke run keeps the real figures
    save(args.out, name, results, report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
