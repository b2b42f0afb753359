"""A durable workflow_continue over stdio, this tree against a commit in the same run:
each tree's `handrail start` (its own SQLite store) drives runs through the loop of
benchmarks/runs_bench.py, the trees alternating in slices so that a busy moment of the
machine or its disk hits both alike. Reported: the p50 and p90 of an accepted loop
step, their ratio to the commit's, and the store's bytes per run (each run a start
and `--steps` accepted continues), with the share of each table (SQLite's dbstat).

    python -m benchmarks.continue_bench --against a1a3104 [--runs 30] [--steps 20]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.runs_bench import CONTEXT, OUTPUT, WORKFLOW
from benchmarks.stdio_bench import Server, sequential
from benchmarks.timing import percentile

ROOT = Path(__file__).resolve().parents[1]
SLICE = 10  # continues between two looks at the WAL


class Tree:
    """One tree's server, its home and its latencies."""

    def __init__(self, label: str, source: Path, folder: Path) -> None:
        self.label, self.home = label, folder / f"home-{label}"
        os.environ["HANDRAIL_HOME"] = str(self.home)  # never the real ~/.handrail
        os.environ.pop("HANDRAIL_DATABASE_URL", None)
        os.environ["PYTHONPATH"] = str(source / "src")
        command = [
            sys.executable,
            "-m",
            "handrail",
            "start",
            "--no-bundled",
            "--workflows",
            str(folder / "flows"),
        ]
        self.server = Server(command)
        self.latencies: list[float] = []
        self.cpu_us: list[float] = []  # the server's CPU per continue, by slice
        self.frames: list[float] = []  # pages the WAL took per continue, by slice
        self.runs = 0
        self._db: sqlite3.Connection | None = None

    def run(self, steps: int) -> None:
        """One run: started, its first step accepted, then `steps` loop rounds timed."""
        started = self.server.request(
            {
                "method": "workflow_start",
                "params": {"workflowId": WORKFLOW["id"], "goal": "Bench", "context": CONTEXT},
            }
        )
        run = started["result"]["runId"]
        first = {"runId": run, "stepId": "prepare", "output": "Did prepare it."}
        assert "result" in self.server.request({"method": "workflow_continue", "params": first})
        body = {"method": "workflow_continue", "params": {"runId": run, "stepId": "work", "output": OUTPUT}}
        for left in range(steps, 0, -SLICE):
            n = min(SLICE, left)
            self.wal().execute("PRAGMA wal_checkpoint(TRUNCATE)")  # emptied: what follows is the slice's
            cpu = self.server.cpu_s()
            self.latencies += sequential(self.server, body, n)
            self.cpu_us.append((self.server.cpu_s() - cpu) * 1e6 / n)
            _, frames, _ = self.wal().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            self.frames.append(frames / n)
        self.runs += 1

    def wal(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = sqlite3.connect(self.home / "handrail.db", isolation_level=None)
        return self._db

    def disk(self) -> dict[str, Any]:
        """Bytes per run of the store once its log is checkpointed, and per table."""
        self.server.close()
        path = self.home / "handrail.db"
        db = self.wal()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        tables: dict[str, int] = {}
        try:
            for name, size in db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"):
                tables[name] = int(size)
        except sqlite3.OperationalError:  # SQLite built without dbstat
            pass
        db.close()
        return {
            "bytes_per_run": path.stat().st_size / self.runs,
            "tables_per_run": {name: size / self.runs for name, size in tables.items()},
        }


def measure(against: str, runs: int, steps: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="handrail-continue-") as tmp:
        folder = Path(tmp)
        (folder / "flows").mkdir()
        (folder / "flows" / "bench-run.json").write_text(json.dumps(WORKFLOW))
        base = folder / "base"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(base), against],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        try:
            trees = [Tree("this tree", ROOT, folder), Tree(against, base, folder)]
            for n in range(runs):
                for tree in trees if n % 2 == 0 else trees[::-1]:
                    tree.run(steps)
            disk = {tree.label: tree.disk() for tree in trees}
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, capture_output=True)
    return {
        tree.label: {
            "p50_us": percentile(tree.latencies, 50),
            "p90_us": percentile(tree.latencies, 90),
            "n": len(tree.latencies),
            "cpu_us": percentile(tree.cpu_us, 50),
            "wal_pages": percentile(tree.frames, 50),
            **disk[tree.label],
        }
        for tree in trees
    }


CHILD = """
import json, os, statistics, sys, tempfile, time
from pathlib import Path
from handrail.catalog import load_catalog
try:
    from handrail.service.core import Service
except ImportError:  # an older tree: one module
    from handrail.service import Service
workflow, context, output, n = json.loads(sys.argv[1])
folder = Path(tempfile.mkdtemp(prefix="handrail-continue-child-"))
(folder / "flows").mkdir()
(folder / "flows" / "bench-run.json").write_text(json.dumps(workflow))
os.environ["HANDRAIL_HOME"] = str(folder / "home")
service = Service(load_catalog(folder / "flows", bundled=False))
started = {"workflowId": workflow["id"], "goal": "Bench", "context": context}
run = service.call("workflow_start", started)["runId"]
service.call("workflow_continue", {"runId": run, "stepId": "prepare", "output": "Did prepare it."})
body = {"runId": run, "stepId": "work", "output": output}
walls, cpus = [], []
for i in range(n + 20):
    wall, cpu = time.perf_counter(), time.thread_time()
    service.call("workflow_continue", body)
    if i >= 20:  # past the first few: caches warm
        cpus.append((time.thread_time() - cpu) * 1e6)
        walls.append((time.perf_counter() - wall) * 1e6)
print(json.dumps({"wall_us": statistics.median(walls), "cpu_us": statistics.median(cpus)}))
"""


def in_process(source: Path, n: int) -> dict[str, float]:
    """One child process on `source`'s tree: a durable continue's wall and CPU time, p50."""
    env = {**os.environ, "PYTHONPATH": str(source / "src")}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps([WORKFLOW, CONTEXT, OUTPUT, n])],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=source,
    )
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def in_process_pairs(against: str, rounds: int, n: int) -> dict[str, Any]:
    """The child on both trees, alternated; each figure the median over the rounds, and
    the median of each round's ratio."""
    with tempfile.TemporaryDirectory(prefix="handrail-continue-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(base), against],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        try:
            pairs = [(in_process(ROOT, n), in_process(base, n)) for _ in range(rounds)]
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, capture_output=True)
    found: dict[str, Any] = {}
    for key in ("wall_us", "cpu_us"):
        found[key] = {
            "this tree": statistics.median(p[0][key] for p in pairs),
            against: statistics.median(p[1][key] for p in pairs),
            "ratio": statistics.median(p[0][key] / p[1][key] for p in pairs),
        }
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.continue_bench")
    parser.add_argument("--against", required=True, metavar="COMMIT")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument(
        "--in-process", type=int, metavar="ROUNDS", help="instead: Service.call in a child process per tree"
    )
    args = parser.parse_args(argv)
    if args.in_process:
        pairs = in_process_pairs(args.against, args.in_process, 200)
        print(
            f"durable workflow_continue through Service.call, p50 of 200 per child, {args.in_process} pairs"
        )
        print(f"| figure | this tree | {args.against} | ratio (median of the pairs') |")
        print("|---|---|---|---|")
        for key, row in pairs.items():
            print(f"| {key} | {row['this tree']:.0f} | {row[args.against]:.0f} | {row['ratio']:.2f}x |")
        return 0
    found = measure(args.against, args.runs, args.steps)
    this, base = found["this tree"], found[args.against]
    print(f"durable workflow_continue over stdio, {this['n']} accepted loop steps per tree, interleaved")
    print(
        f"| tree | p50 | p90 | server CPU per continue | WAL pages per continue | bytes per run "
        f"({args.steps + 1} continues) |"
    )
    print("|---|---|---|---|---|---|")
    for label, row in found.items():
        print(
            f"| {label} | {row['p50_us']:.0f} µs | {row['p90_us']:.0f} µs | {row['cpu_us']:.0f} µs "
            f"| {row['wal_pages']:.1f} | {row['bytes_per_run']:,.0f} |"
        )
    keys = ("p50_us", "p90_us", "cpu_us", "wal_pages", "bytes_per_run")
    print(f"this tree / {args.against}: " + ", ".join(f"{k} {this[k] / base[k]:.2f}x" for k in keys))
    print("bytes per run by table:")
    for label, row in found.items():
        shares = sorted(row["tables_per_run"].items(), key=lambda kv: -kv[1])
        print(f"  {label}: " + ", ".join(f"{name} {size:,.0f}" for name, size in shares[:12]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
