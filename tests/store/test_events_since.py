"""Every run's events from a time on, as both stores read them for the audit trail:
oldest first, each with the hash of the event before it in its own run."""

from __future__ import annotations

import pytest

from handrail.model.runs import NewEvent, RunUpdate
from handrail.store import RunStore
from tests.store.test_store import record, store, store_url  # noqa: F401  # the fixtures, on both stores

pytestmark = pytest.mark.slow


def test_events_from_a_time_on_come_oldest_first_each_linked_to_the_one_before(
    store: RunStore,  # noqa: F811
) -> None:
    store.put_source("h1", "wf", b"{}")
    first = store.create(record("r1", at="2026-01-01T00:00:00.000Z"), [NewEvent("started")])
    store.create(
        record("r2", at="2026-01-02T00:00:00.000Z"),
        [NewEvent("started"), NewEvent("context", None, {"n": 1})],
    )
    store.update(first, RunUpdate(), [NewEvent("context", None, {"n": 2})], "alice")  # written now
    found = store.events_since("2026-01-01T12:00:00.000Z", 100)
    assert [(run, e.seq) for run, e, _ in found] == [("r2", 1), ("r2", 2), ("r1", 2)]
    r1 = store.events("r1")
    r2 = store.events("r2")
    assert [prev for _, _, prev in found] == [None, r2[0].hash, r1[0].hash]
    assert found[2][1].actor == "alice" and found[2][1].data == {"n": 2}
    assert [(run, e.seq) for run, e, _ in store.events_since("", 2)] == [("r1", 1), ("r2", 1)]
