"""The store's part of /metrics: a write that meets a run another writer moved counts as
a retry, a write the database refuses counts as an error, and a store that cannot answer
a scrape shows `handrail_store_up 0` instead of failing the scrape."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from handrail.catalog import load_catalog
from handrail.model.runs import EventType, NewEvent, RunUpdate
from handrail.runs import Runs
from handrail.runs.ledger import RunSettings
from handrail.service.core import Service
from handrail.store import open_store
from handrail.store.base import Conflict
from handrail.transport.metrics import Metrics
from tests.gate.runs import GateWorld


def _figure(metrics: Metrics, name: str) -> float:
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            if sample.name == name:
                return float(sample.value)
    raise AssertionError(f"{name} is not exposed")


def test_a_write_on_a_moved_run_counts_a_retry_and_a_refused_write_an_error(tmp_path: Path) -> None:
    world = GateWorld(tmp_path)
    run_id = world.start("implement")
    world.close()
    metrics = Metrics(lambda: service)
    runs = Runs(lambda: open_store(world.url), RunSettings(observer=metrics))
    service = Service(load_catalog(world.workflows, bundled=False), runs=runs)
    ledger = runs.ledger
    stale = ledger.store.get(run_id)
    assert stale is not None
    note = [NewEvent(EventType.CONTEXT, None, {"note": "meanwhile"})]
    ledger.store.update(stale, RunUpdate(), note, "agent")  # another writer moves the run
    with pytest.raises(Conflict):
        ledger.write(stale, RunUpdate(), note, "agent")
    assert _figure(metrics, "handrail_store_retries_total") == 1
    assert _figure(metrics, "handrail_runs") >= 0 and _figure(metrics, "handrail_store_up") == 1
    ledger.store.close()  # the database goes away under the server
    with pytest.raises(Exception) as refused:
        ledger.write(stale._replace(version=stale.version + 1), RunUpdate(), note, "agent")
    assert not isinstance(refused.value, Conflict)
    assert _figure(metrics, "handrail_store_errors_total") == 1
    assert _figure(metrics, "handrail_store_up") == 0  # the scrape still answers


def test_what_driven_agents_spent_is_counted_by_workflow_and_step_from_the_usage_events(
    tmp_path: Path,
) -> None:
    from handrail.store.urls import sqlite_url
    from tests.helpers.event_log import fill_case

    url = sqlite_url(tmp_path / "golden.db")
    fill_case(url)  # spec/cases/stats: two agent processes at `understand`, one at `plan`
    runs = Runs(lambda: open_store(url))
    (tmp_path / "flows").mkdir()
    try:
        service = Service(load_catalog(tmp_path / "flows", bundled=False), runs=runs)
        metrics = Metrics(lambda: service)
        families = {f.name: f for f in text_string_to_metric_families(metrics.exposition().decode())}
    finally:
        runs.close()
    tokens = {
        (s.labels["step"], s.labels["kind"]): s.value for s in families["handrail_agent_tokens"].samples
    }
    assert tokens == {("understand", "input"): 2000, ("understand", "output"): 500,
                      ("plan", "input"): 500, ("plan", "output"): 50}  # fmt: skip
    cost = {s.labels["step"]: s.value for s in families["handrail_agent_cost_usd"].samples}
    assert cost == {"understand": pytest.approx(0.02), "plan": 0.0}
    assert {s.labels["workflow"] for s in families["handrail_agent_cost_usd"].samples} == {"demo"}
    versions = {s.labels["version"] for s in families["handrail_agent_cost_usd"].samples}
    assert versions == {"1.0.0"}  # the version the driven runs were pinned to
