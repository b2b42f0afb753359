"""A run's log grows with every tool call a gated session makes; what workflow_resume
and `handrail runs show` read of it is the part they show (its accepted steps and its
last events), so a 20,000-event run costs them what a short one does. The cost is
counted in SQLite's own steps over the store's connections, not timed."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handrail.catalog import load_catalog
from handrail.cli import main
from handrail.model.runs import EventType, NewEvent, RunUpdate
from handrail.runs import Runs
from handrail.runs.ledger import RunSettings
from handrail.service.core import LaterRuns, Service
from handrail.store.sqlite import SqliteStore
from handrail.store.urls import sqlite_url
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

STEPS_PER_TICK = 100  # SQLite calls the progress handler once per this many virtual-machine steps
TOOL_CALL = NewEvent(EventType.GATE, "build", {"event": "after-tool", "decision": "record", "tool": "Edit"})


class CountedStore(SqliteStore):
    """The SQLite store, counting the work SQLite does on each of its connections."""

    ticks = 0

    def _connect(self) -> sqlite3.Connection:
        db = super()._connect()
        db.set_progress_handler(self._tick, STEPS_PER_TICK)
        return db

    @classmethod
    def _tick(cls) -> int:
        cls.ticks += 1
        return 0  # go on


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    write(tmp_path / "flows", build_feature())
    path = tmp_path / "runs.db"

    def runs(**served: Any) -> Runs:
        return Runs(
            lambda: CountedStore(path, url=sqlite_url(path)), RunSettings(database_file=str(path), **served)
        )

    made = Service(load_catalog(tmp_path / "flows", bundled=False), runs=LaterRuns(runs, str(path)))
    yield made
    made.close()


def gated_run(service: Service, tool_calls: int) -> str:
    """A run with its plan accepted, then `tool_calls` gate records of the build step."""
    run = service.call("workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Long"})["runId"]
    service.call("workflow_continue", {"runId": run, "stepId": "plan", "output": "Plan: one part."})
    store = service.runs.store
    for start in range(0, tool_calls, 1000):
        record = store.get(run)
        assert record is not None
        store.update(record, RunUpdate(), [TOOL_CALL] * min(1000, tool_calls - start), "gate")
    return run


def counted(call: Any) -> int:
    CountedStore.ticks = 0
    call()
    return CountedStore.ticks


def test_resuming_a_20000_event_run_reads_what_resuming_a_short_one_does(service: Service) -> None:
    short, long = gated_run(service, 10), gated_run(service, 20_000)
    resumed: dict[str, Any] = {}

    def resume(run: str) -> None:
        resumed[run] = service.call("workflow_resume", {"runId": run})

    resume(short), resume(long)  # each connection made and its statements prepared
    short_cost, long_cost = counted(lambda: resume(short)), counted(lambda: resume(long))

    assert resumed[long]["recap"] == resumed[short]["recap"]
    assert [r["stepId"] for r in resumed[long]["recap"]] == ["plan"]
    whole_log = counted(lambda: service.runs.store.events(long))  # what reading every event costs
    assert long_cost <= short_cost * 1.5 + 10, (short_cost, long_cost)
    assert long_cost * 50 < whole_log, (long_cost, whole_log)


def test_runs_show_of_a_20000_event_run_reads_its_accepted_steps_and_last_events(
    service: Service, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = gated_run(service, 20_000)
    url = sqlite_url(tmp_path / "runs.db")
    assert main(["runs", "show", run, "--format", "json", "--database", url, "--events", "30"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [e["type"] for e in shown["events"]][:1] == ["accepted"]
    assert len(shown["events"]) == 1 + 30 and shown["eventsNotShown"] == 20_002 - 31
    last = shown["events"][-1]
    assert (last["seq"], last["type"], last["tool"]) == (20_002, "gate", "Edit")

    assert main(["runs", "show", run, "--database", url, "--events", "2"]) == 0
    text = capsys.readouterr().out
    assert "(19999 earlier events not shown: --events N shows more" in text
    assert text.count("after-tool") == 2 and "Plan: one part." in text


def test_the_window_runs_show_reads_costs_the_same_at_20000_events_as_at_300(service: Service) -> None:
    short, long = gated_run(service, 300), gated_run(service, 20_000)
    records = {run: service.runs.store.get(run) for run in (short, long)}
    window: dict[str, Any] = {}

    def read(run: str) -> None:
        record = records[run]
        assert record is not None
        window[run] = service.runs.shown_events(record, 200)

    read(short), read(long)
    short_cost, long_cost = counted(lambda: read(short)), counted(lambda: read(long))
    assert [e.type for e in window[long]].count("accepted") == 1 and len(window[long]) == 201
    assert long_cost <= short_cost * 1.5 + 10, (short_cost, long_cost)
