"""The run store's write path: per-update time of runs that each walk six steps (a
rejection with an issue, then two checks and the acceptance), on SQLite, or on the
database URL given. Its commit dominates; compare two versions interleaved, on the
same machine, since the spread between repeats under load is large.

    python -m benchmarks.store_write_bench [URL] [--runs 40]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from handrail.model.runs import NewEvent, RunRecord, RunUpdate
from handrail.store import open_store
from handrail.store.urls import sqlite_url

STEPS = ("a", "b", "c", "d", "e", "f")
AT = "2026-01-01T00:00:00.000Z"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?", default=None)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(args.url or sqlite_url(Path(folder) / "write.db"))
        store.put_source("h1", "wf", b"{}")
        times: list[float] = []
        for n in range(args.runs):
            record = RunRecord(
                f"r{n}-{time.time_ns()}",
                "ann",
                "/w",
                "wf",
                "1.0.0",
                "h1",
                "g",
                "active",
                {},
                {},
                0,
                AT,
                AT,
                1,
            )
            run = store.create(record, [NewEvent("started")])
            for step in STEPS:
                rejected = [NewEvent("rejected", step, {"output": "x", "issues": ["Missing field summary"]})]
                accepted = [
                    NewEvent("check", step, {"check": "command", "passed": True, "durationMs": 40}),
                    NewEvent("check", step, {"check": "file", "passed": True}),
                    NewEvent("accepted", step, {"output": "x"}),
                ]
                for change, events in ((RunUpdate(), rejected), (RunUpdate(accepted=1), accepted)):
                    began = time.perf_counter()
                    run = store.update(run, change, events, "ann")
                    times.append(time.perf_counter() - began)
        store.close()
    times.sort()
    print(
        f"{len(times)} updates: median {statistics.median(times) * 1e3:.3f} ms, "
        f"p90 {times[int(len(times) * 0.9)] * 1e3:.3f} ms"
    )


if __name__ == "__main__":
    main()
