"""workflow_continue over stdio against what it replaces, measured in the same run:
the classic pair (workflow_validate + workflow_next) over stdio on the same server,
plus one durable SQLite commit (WAL, synchronous=FULL) of a run-sized write.
Target: continue's p50 at most 1.5x the sum of those p50s.

Also spawn to `initialize` with no run database, and with open runs to list.

    python -m benchmarks.runs_bench [--quick] [--n 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.saving import save
from benchmarks.stdio_bench import Server, sequential
from benchmarks.timing import percentile

RESULTS = Path(__file__).resolve().parent / "results"
WORKFLOW = {
    "id": "bench-run",
    "name": "Bench run",
    "description": "A loop that never ends by itself, for measuring workflow_continue.",
    "version": "1.0.0",
    "steps": [
        {"id": "prepare", "title": "Prepare", "prompt": "Prepare."},
        {
            "id": "work-loop",
            "type": "loop",
            "title": "Work",
            "loop": {
                "type": "until",
                "condition": {"var": "finished", "equals": True},
                "maxIterations": 1000,  # the most a loop may have: n stays below it
                "iterationVar": "iteration",
            },
            "body": [
                {
                    "id": "work",
                    "title": "Work, round {{iteration}}",
                    "prompt": "Do round {{iteration}} of the work and say what you did.",
                    "validationCriteria": [
                        {"type": "contains", "value": "Did", "message": "Say what you did"},
                        {"type": "length", "min": 10, "message": "A sentence at least"},
                    ],
                }
            ],
        },
        {"id": "wrap-up", "title": "Wrap up", "prompt": "Wrap up."},
    ],
}
OUTPUT = "Did the round of work: changed two files, ran the tests, all green."
CONTEXT = {"ticket": "T-42", "finished": False}


def command(folder: Path) -> list[str]:
    return [sys.executable, "-m", "handrail", "start", "--no-bundled", "--workflows", str(folder)]


class Commits:
    """One durable write as a run makes it: the run row and an event row, one commit."""

    def __init__(self, folder: Path) -> None:
        self.db = sqlite3.connect(folder / "commit.db", isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = FULL")
        self.db.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, position TEXT, version INTEGER)")
        self.db.execute("CREATE TABLE events (run TEXT, seq INTEGER, data TEXT, PRIMARY KEY (run, seq))")
        self.db.execute("INSERT INTO runs VALUES ('r', '', 1)")
        self.position = json.dumps(
            {"step": {"id": "work", "prompt": "x" * 400}, "guidance": {"prompt": "y" * 600}}
        )
        self.event = json.dumps({"output": OUTPUT})
        self.seq = 0

    def latencies(self, n: int) -> list[float]:
        out = []
        for _ in range(n):
            self.seq += 1
            start = time.perf_counter()
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute(
                "UPDATE runs SET position = ?, version = version + 1 WHERE id = 'r'", (self.position,)
            )
            self.db.execute("INSERT INTO events VALUES ('r', ?, ?)", (self.seq, self.event))
            self.db.execute("COMMIT")
            out.append((time.perf_counter() - start) * 1e6)
        return out

    def close(self) -> None:
        self.db.close()


def spawn_to_initialize(folder: Path, spawns: int) -> float:
    times = []
    for _ in range(spawns):
        server = Server(command(folder))
        times.append(server.spawn_to_init_ms)
        server.close()
    return percentile(times, 50)


def measure(n: int, spawns: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="handrail-runs-bench-") as tmp:
        folder = Path(tmp)
        (folder / "flows").mkdir()
        (folder / "flows" / "bench-run.json").write_text(json.dumps(WORKFLOW))
        os.environ["HANDRAIL_HOME"] = str(folder / "home")  # never the real ~/.handrail
        os.environ.pop("HANDRAIL_DATABASE_URL", None)
        init_without_database = spawn_to_initialize(folder / "flows", spawns)

        server = Server(command(folder / "flows"))
        start = server.request(
            {
                "method": "workflow_start",
                "params": {"workflowId": "bench-run", "goal": "Bench", "context": CONTEXT},
            }
        )["result"]
        run = start["runId"]
        first = server.request(
            {
                "method": "workflow_continue",
                "params": {"runId": run, "stepId": "prepare", "output": "Did prepare it."},
            }
        )["result"]
        assert first["accepted"] and first["step"]["id"] == "work", first
        continue_body = {
            "method": "workflow_continue",
            "params": {"runId": run, "stepId": "work", "output": OUTPUT},
        }
        validate_body = {
            "method": "workflow_validate",
            "params": {"workflowId": "bench-run", "stepId": "work", "output": OUTPUT, "context": CONTEXT},
        }
        next_body = {
            "method": "workflow_next",
            "params": {
                "workflowId": "bench-run",
                "completedSteps": ["prepare"],
                "context": CONTEXT,
                "state": {"loops": [{"id": "work-loop", "iteration": 7}]},
            },
        }
        rounds: dict[str, list[float]] = {"continue": [], "validate": [], "next": [], "commit": []}
        commits = Commits(folder)
        # interleaved in small slices, so that a busy moment on the machine (or its disk)
        # hits all alike
        for _ in range(n // 10):
            rounds["continue"] += sequential(server, continue_body, 10)
            rounds["validate"] += sequential(server, validate_body, 10)
            rounds["next"] += sequential(server, next_body, 10)
            rounds["commit"] += commits.latencies(10)
        commits.close()
        check = server.request(continue_body)["result"]
        assert check["accepted"] and check["progress"]["completed"] == n - n % 10 + 2, check
        server.close()
        init_with_runs = spawn_to_initialize(folder / "flows", spawns)  # one open run to list

    p50 = {name: percentile(values, 50) for name, values in rounds.items()}
    baseline = p50["validate"] + p50["next"] + p50["commit"]
    return {
        "n": n,
        "p50_us": p50,
        "p99_us": {name: percentile(values, 99) for name, values in rounds.items()},
        "classic_pair_plus_commit_us": baseline,
        "ratio": p50["continue"] / baseline,
        "target_ratio": 1.5,
        "spawn_to_initialize_ms": {"no_database": init_without_database, "one_open_run": init_with_runs},
    }


def report(results: dict[str, Any]) -> str:
    p50, p99 = results["p50_us"], results["p99_us"]
    rows = [
        ("workflow_continue (accepted, loop step)", "continue"),
        ("workflow_validate", "validate"),
        ("workflow_next (loop midway)", "next"),
        ("one SQLite commit (WAL, synchronous=FULL)", "commit"),
    ]
    lines = [
        f"workflow_continue over stdio, n = {results['n']} each, interleaved:",
        "",
        "| what | p50 | p99 |",
        "|---|---|---|",
        *(f"| {label} | {p50[key]:.0f} µs | {p99[key]:.0f} µs |" for label, key in rows),
        "",
        f"continue p50 / (validate + next + commit) p50 = {p50['continue']:.0f} / "
        f"{results['classic_pair_plus_commit_us']:.0f} = **{results['ratio']:.2f}x** "
        f"(target at most {results['target_ratio']}x)",
        "",
        "spawn to `initialize`: {no_database:.0f} ms without a run database, {one_open_run:.0f} ms "
        "listing an open run".format(**results["spawn_to_initialize_ms"]),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.runs_bench")
    parser.add_argument("--quick", action="store_true", help="small N: a smoke test, not a measurement")
    parser.add_argument("--n", type=int, default=900, help="requests of each kind (at most 990)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    n, spawns = (20, 2) if args.quick else (min(args.n, 990), 10)
    results = measure(n, spawns)
    save(args.out, "runs-quick" if args.quick else "runs", results, report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
