"""`handrail runs list` on a large SQLite store, this tree against a commit in the same
run: the store of benchmarks/stats_bench.py (50,000 runs, about a million events), each
tree's command a fresh process timed from spawn to exit, the trees alternating, best of
the repeats. Beside them, SQLite's whole-file `PRAGMA quick_check` alone, which a
command that only reads no longer runs.

    python -m benchmarks.runs_list_bench --against 1ef4d00 [--runs 50000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.stats_bench import generate
from handrail.store.urls import sqlite_url
from tests.helpers.event_log import fill

ROOT = Path(__file__).resolve().parents[1]


def listed(source: Path, url: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(source / "src")}
    command = [sys.executable, "-m", "handrail", "runs", "list", "--limit", "20", "--database", url]
    began = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env, cwd=source)
    return time.perf_counter() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.runs_list_bench")
    parser.add_argument("--against", required=True, metavar="COMMIT")
    parser.add_argument("--runs", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="handrail-runs-list-") as tmp:
        folder = Path(tmp)
        database = folder / "runs.db"
        fill(sqlite_url(database), *generate(args.runs))
        os.environ["HANDRAIL_HOME"] = str(folder / "home")  # never the real ~/.handrail
        base = folder / "base"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(base), args.against],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        try:
            times: dict[str, list[float]] = {"this tree": [], args.against: []}
            checks = []
            for _ in range(args.repeat):
                times["this tree"].append(listed(ROOT, sqlite_url(database)))
                times[args.against].append(listed(base, sqlite_url(database)))
                db = sqlite3.connect(database)
                began = time.perf_counter()
                db.execute("PRAGMA quick_check(3)").fetchall()
                checks.append(time.perf_counter() - began)
                db.close()
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, capture_output=True)
        size = database.stat().st_size
    print(f"`handrail runs list --limit 20`, {args.runs:,} runs, {size / 1e6:.0f} MB, best of {args.repeat}")
    print("| what | spawn to exit |")
    print("|---|---|")
    for label, found in times.items():
        print(f"| {label} | {min(found):.3f} s |")
    print(f"| `PRAGMA quick_check` alone | {min(checks):.3f} s |")
    print(f"this tree / {args.against}: {min(times['this tree']) / min(times[args.against]):.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
