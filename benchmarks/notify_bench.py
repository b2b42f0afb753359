"""What notifications cost a SQLite run store: a run write with and without two
notifications queued in its transaction, the worker's look at an outbox with nothing
due (what every poll pays), and delivery to a local receiver (tests/helpers/receiver.py)
through the worker's own send, per notification.

    python -m benchmarks.notify_bench [--writes 500]

The notifications of one run go out one at a time (in order), so delivery here is the
slowest case: one run's backlog.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from handrail.model.runs import EventType, NewEvent, RunUpdate
from handrail.notify.targets import NotifyConfig, Target
from handrail.notify.worker import Deliverer
from handrail.store.base import NewNotification
from handrail.store.sqlite import SqliteStore
from tests.helpers.receiver import Receiver
from tests.store.test_store import record


def _per_write(store: SqliteStore, run_id: str, writes: int, notes: list[NewNotification]) -> float:
    store.put_source("h1", "wf", b"{}")
    run = store.create(record(run_id), [NewEvent(EventType.STARTED)])
    began = time.perf_counter()
    for _ in range(writes):
        run = store.update(run, RunUpdate(), [NewEvent(EventType.CONTEXT)], "bench", notes)
    return (time.perf_counter() - began) / writes


def measure(writes: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="handrail-notify-") as folder, Receiver() as receiver:
        store = SqliteStore(Path(folder) / "runs.db")
        try:
            plain = _per_write(store, "plain", writes, [])
            note = [NewNotification(receiver.url, "run.bench", {"type": "run.bench"})] * 2
            queued = _per_write(store, "queued", writes, note)
            config = NotifyConfig((Target.parse(receiver.url),), secret="bench")
            worker = Deliverer(lambda: store, config)
            began = time.perf_counter()
            sent = 0
            while batch := store.deliver_due(worker.send, 4):
                sent += batch
            delivery = (time.perf_counter() - began) / sent
            polls = []
            for _ in range(200):
                began = time.perf_counter()
                assert store.deliver_due(worker.send, 4) == 0  # nothing due: what a poll costs
                polls.append(time.perf_counter() - began)
        finally:
            store.close()
    return {
        "writeMs": round(plain * 1000, 3),
        "writeWithTwoNotificationsMs": round(queued * 1000, 3),
        "delivered": sent,
        "deliveryMsEach": round(delivery * 1000, 3),
        "emptyPollMsMedian": round(statistics.median(polls) * 1000, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=500)
    args = parser.parse_args()
    print(json.dumps(measure(args.writes), indent=2))


if __name__ == "__main__":
    main()
