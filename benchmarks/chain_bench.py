"""What the hash chain costs: chaining a write's events (on top of encoding their data,
which every write did before), recomputing a run's chain (`runs verify`, the
dashboard's run page), and exporting and verifying a record, for events whose output
is 200 B, 10 KB and 100 KB of text.

    python -m benchmarks.chain_bench [--n 2000]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from benchmarks.timing import percentile
from handrail.model.codec import encode_stored
from handrail.model.runs import Event, NewEvent, RunRecord, RunStatus
from handrail.runs.record import export, verify
from handrail.store.chain import chained_rows, first_break


def timed(work: Callable[[], object], n: int) -> float:
    """p50 of `work` in microseconds."""
    times = []
    for _ in range(n):
        start = time.perf_counter_ns()
        work()
        times.append((time.perf_counter_ns() - start) / 1000)
    return percentile(times, 50)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    n = parser.parse_args().n
    at = "2026-01-01T00:00:00.000Z"
    for size in (200, 10_000, 100_000):
        data = {"output": "x" * size, "title": "Build", "contextChanges": {"k": 1}}
        events = [NewEvent("accepted", "build", data)]
        encoded = timed(lambda: [encode_stored(e.data) for e in events], n)  # noqa: B023
        chained = timed(lambda: chained_rows("run_x", 4, "ab" * 32, events, "local", at), n)  # noqa: B023
        rows = chained_rows("run_x", 0, None, events * 100, "local", at)
        log = [Event(r.seq, r.type, r.at, r.actor, r.step_id, data, r.hash) for r in rows]
        verified = timed(lambda: first_break("run_x", log, rows[-1].hash, 100), max(10, n // 100))  # noqa: B023
        run = RunRecord(
            "run_x",
            "local",
            "/w",
            "wf",
            "1",
            "h",
            "goal",
            RunStatus.ACTIVE,
            {},
            {},
            0,
            at,
            at,
            1,
            100,
            rows[-1].hash,
        )
        record = export(run, log, b"{}", at)
        exported = timed(lambda: export(run, log, b"{}", at), max(10, n // 100))  # noqa: B023
        checked = timed(lambda: verify(record), max(10, n // 100))  # noqa: B023
        print(
            f"output {size:>7} B: encode {encoded:8.1f} us, encode+chain {chained:8.1f} us (one event); "
            f"verify 100 events {verified / 1000:7.2f} ms; export {exported / 1000:7.2f} ms, "
            f"verify --file {checked / 1000:7.2f} ms ({len(record) // 1024} KiB)"
        )


if __name__ == "__main__":
    main()
