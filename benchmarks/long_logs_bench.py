"""workflow_resume and `handrail runs show` of runs whose logs hold 0 to 20,000 gate
events (a long gated session records every tool call), each with the same five
accepted steps: both read the accepted steps and the last events only, so their time
should not follow the log's length. Measured in-process on SQLite, the sizes
interleaved in each round, best of the rounds; the ratio is each size's time over
the time at 0 events. The whole log read and recapped is shown beside them: what
resume cost before.

    python -m benchmarks.long_logs_bench [--rounds 5] [--sizes 0,1000,5000,20000]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.runs_bench import CONTEXT, OUTPUT, WORKFLOW
from benchmarks.timing import per_call_ns
from handrail.catalog import load_catalog
from handrail.cli import main as cli
from handrail.cli.runs import SHOWN_EVENTS
from handrail.model.request import Request
from handrail.model.runs import NewEvent, RunUpdate
from handrail.runs import Runs
from handrail.runs.shapes import recap
from handrail.service.core import Service, later_runs
from handrail.store.urls import sqlite_url

ACCEPTED = 5  # prepare, then four rounds of the loop
TOOL_CALL = NewEvent("gate", "work", {"event": "after-tool", "decision": "record", "tool": "Edit"})


def gated_run(service: Service, events: int) -> str:
    run = service.call("workflow_start", {"workflowId": WORKFLOW["id"], "goal": "Long", "context": CONTEXT})
    run_id: str = run["runId"]
    service.call("workflow_continue", {"runId": run_id, "stepId": "prepare", "output": OUTPUT})
    for _ in range(ACCEPTED - 1):
        service.call("workflow_continue", {"runId": run_id, "stepId": "work", "output": OUTPUT})
    store = service.runs.store
    for start in range(0, max(events, 1), 1000):  # at 0 too: each run last written alike
        record = store.get(run_id)
        assert record is not None
        store.update(record, RunUpdate(), [TOOL_CALL] * min(1000, events - start), "gate")
    return run_id


def reads(runs: Runs, run_id: str) -> None:
    """What `runs show` reads of the store: the run, its shown events, its notifications."""
    run = runs.run(Request(owner=runs.default_owner), run_id)
    runs.shown_events(run, SHOWN_EVENTS), runs.notifications(run)


def shown(url: str, run_id: str, form: str) -> Callable[[], None]:
    def show() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli(["runs", "show", run_id, "--format", form, "--database", url]) == 0

    return show


def measure(sizes: list[int], rounds: int) -> dict[str, dict[int, list[float]]]:
    with tempfile.TemporaryDirectory(prefix="handrail-long-logs-") as tmp:
        folder = Path(tmp)
        (folder / "flows").mkdir()
        (folder / "flows" / "bench-run.json").write_text(json.dumps(WORKFLOW))
        os.environ["HANDRAIL_HOME"] = str(folder / "home")  # never the real ~/.handrail
        os.environ.pop("HANDRAIL_DATABASE_URL", None)
        url = sqlite_url(folder / "runs.db")
        service = Service(load_catalog(folder / "flows", bundled=False), runs=later_runs(url))
        runs = {size: gated_run(service, size) for size in sizes}
        workflow = service.runs.pinned(None, service.runs.store.get(runs[sizes[0]]))  # type: ignore[arg-type]
        calls: dict[str, Callable[[int], Callable[[], Any]]] = {
            "workflow_resume": lambda n: lambda: service.call("workflow_resume", {"runId": runs[n]}),
            "runs show's reads": lambda n: lambda: reads(service.runs, runs[n]),
            "runs show (text)": lambda n: shown(url, runs[n], "text"),
            "runs show (json)": lambda n: shown(url, runs[n], "json"),
            "whole log read and recapped": lambda n: (
                lambda: recap(service.runs.store.events(runs[n]), workflow)
            ),
        }
        found: dict[str, dict[int, list[float]]] = {name: {size: [] for size in sizes} for name in calls}
        order = random.Random(37)
        for _ in range(rounds):
            for name, call in calls.items():
                for size in order.sample(sizes, len(sizes)):  # no size always first after another call
                    found[name][size].append(per_call_ns(call(size), budget_s=0.05, repeats=3))
        service.close()
    return found


def ratio(times: list[float], bases: list[float]) -> str:
    return f"{statistics.median(t / b for t, b in zip(times, bases, strict=True)):.2f}x"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.long_logs_bench")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", default="0,1000,5000,20000")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    found = measure(sizes, args.rounds)
    print(
        f"µs per call, median of {args.rounds} rounds (each the best of 3 repeats); in brackets the median "
        f"of each round's ratios to {' and '.join(f'{s:,}' for s in sizes[:2])} gate events"
    )
    print("| call | " + " | ".join(f"{s:,} events" for s in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for name, by_size in found.items():
        cells = []
        for size in sizes:
            ratios = [ratio(by_size[size], by_size[base]) for base in sizes[:2]]
            cells.append(f"{statistics.median(by_size[size]) / 1e3:,.0f} (" + ", ".join(ratios) + ")")
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
