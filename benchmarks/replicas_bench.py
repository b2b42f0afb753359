"""workflow_continue throughput over HTTP: PostgreSQL with 1, 2 and 4 `handrail serve`
replicas (loopback, clients spread evenly, no load balancer) against SQLite with
one process, measured in the same run and interleaved in rounds, so a busy moment
on the machine hits all alike. Each client drives its own run through a loop step
that is accepted every time; the figure is accepted submissions per second.

PostgreSQL runs with fsync on, like SQLite's synchronous=FULL: every answer waits
for its commit to reach the disk. The server is a throwaway cluster the benchmark
starts itself (tests/postgres.py: Debian's initdb and pg_ctl).

    python -m benchmarks.replicas_bench [--quick] [--seconds 5] [--clients 16]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

from benchmarks.runs_bench import OUTPUT, WORKFLOW
from benchmarks.saving import save
from tests.helpers.http import HttpServer
from tests.postgres import Cluster, unavailable

RESULTS = Path(__file__).resolve().parent / "results"
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
ROUNDS_PER_RUN = 900  # continues per run before a client starts a new one (the loop allows 1000)
CONFIGS = ("sqlite, 1 process", "postgresql, 1 replica", "postgresql, 2 replicas", "postgresql, 4 replicas")


def _call(client: httpx.Client, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer: dict[str, Any] = client.post(url, json=body, headers=HEADERS).json()
    if "result" not in answer:
        raise RuntimeError(f"{method} failed: {answer}")
    result: dict[str, Any] = answer["result"]
    return result


def _new_run(client: httpx.Client, url: str) -> str:
    started = _call(client, url, "workflow_start",
                    {"workflowId": "bench-run", "goal": "Bench", "context": {"finished": False}})  # fmt: skip
    run_id: str = started["runId"]
    _call(client, url, "workflow_continue", {"runId": run_id, "stepId": "prepare", "output": "Did prepare."})
    return run_id


def throughput(urls: list[str], clients: int, seconds: float) -> float:
    """Accepted workflow_continue calls per second, `clients` at once, client i on urls[i % n]."""
    go, stop = threading.Barrier(clients + 1), threading.Event()
    counts = [0] * clients

    def client(i: int) -> None:
        url = urls[i % len(urls)]
        with httpx.Client(timeout=60) as http:
            run_id, done = _new_run(http, url), 0
            go.wait(120)
            while not stop.is_set():
                if done == ROUNDS_PER_RUN:
                    run_id, done = _new_run(http, url), 0
                result = _call(http, url, "workflow_continue",
                               {"runId": run_id, "stepId": "work", "output": OUTPUT})  # fmt: skip
                if not result["accepted"]:
                    raise RuntimeError(f"not accepted: {result}")
                done += 1
                counts[i] += 1

    with ThreadPoolExecutor(clients) as pool:
        futures = [pool.submit(client, i) for i in range(clients)]
        go.wait(120)
        time.sleep(seconds / 4)  # warm up: connections, pools, caches
        before, began = sum(counts), time.perf_counter()
        time.sleep(seconds)
        after, ended = sum(counts), time.perf_counter()
        stop.set()
        for future in futures:
            future.result()
    return (after - before) / (ended - began)


def measure(seconds: float, rounds: int, clients: int) -> dict[str, Any]:
    reason = unavailable()
    if reason is not None:
        raise RuntimeError(f"cannot start PostgreSQL: {reason}")
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="handrail-replicas-bench-") as tmp:
        flows = Path(tmp) / "flows"
        flows.mkdir()
        (flows / "bench-run.json").write_text(json.dumps(WORKFLOW))
        cluster = Cluster(fsync=True)
        stack.callback(cluster.stop)
        common = ("--no-bundled", "--workflows", str(flows), "--database")
        sqlite_url = f"sqlite:///{Path(tmp) / 'runs.db'}"
        servers: dict[str, list[HttpServer]] = {
            CONFIGS[0]: [stack.enter_context(HttpServer(*common, sqlite_url))]
        }
        for config, replicas in zip(CONFIGS[1:], (1, 2, 4), strict=True):
            url = cluster.database("bench")
            servers[config] = [stack.enter_context(HttpServer(*common, url)) for _ in range(replicas)]
        per_round: dict[str, list[float]] = {config: [] for config in CONFIGS}
        for _ in range(rounds):
            for config in CONFIGS:
                per_round[config].append(throughput([s.url for s in servers[config]], clients, seconds))
    median = {config: statistics.median(values) for config, values in per_round.items()}
    base = per_round[CONFIGS[0]]
    return {
        "seconds": seconds,
        "rounds": rounds,
        "clients": clients,
        "per_second": median,
        "per_round": per_round,
        # each round against the SQLite figure of the same round: the machine's load
        # swings between rounds more than between the configurations of one round
        "ratio_to_sqlite": {
            config: statistics.median(v / b for v, b in zip(values, base, strict=True))
            for config, values in per_round.items()
        },
    }


def report(results: dict[str, Any]) -> str:
    lines = [
        f"workflow_continue over HTTP, {results['clients']} clients, {results['seconds']:g} s a round, "
        f"median of {results['rounds']} interleaved rounds (the ratio: median of each round's against "
        "SQLite's in that round):",
        "",
        "| store, servers | accepted / s | vs SQLite |",
        "|---|---|---|",
        *(
            f"| {config} | {results['per_second'][config]:.0f} | {results['ratio_to_sqlite'][config]:.2f}x |"
            for config in CONFIGS
        ),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smoke run: short, one round")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    seconds, rounds = (0.5, 1) if args.quick else (args.seconds, args.rounds)
    results = measure(seconds, rounds, args.clients)
    name = "replicas-quick" if args.quick else "replicas"  # a smoke run keeps the real figures
    save(args.out, name, results, report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
