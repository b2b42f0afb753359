"""docs/grafana-dashboard.json is a Grafana dashboard whose every query names a figure
the server's /metrics exposes, and that shows every figure the server exposes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from handrail.catalog import load_catalog
from handrail.runs import Runs
from handrail.service.core import Service
from handrail.store import open_store
from handrail.store.urls import sqlite_url
from handrail.transport.metrics import Metrics
from tests.helpers.event_log import fill_case

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json"
NAME = re.compile(r"\bhandrail_[a-z_]+\b")


def _exposed(tmp: Path) -> tuple[set[str], set[str]]:
    """The sample names and the family names of a scrape after a request, a check and
    driven agents' usage (spec/cases/stats' event log)."""
    url = sqlite_url(tmp / "runs.db")
    fill_case(url)
    service = Service(load_catalog(bundled=True), runs=Runs(lambda: open_store(url)))
    metrics = Metrics(lambda: service)
    metrics.request("tools/call", "workflow_list", "ok", 0.001)
    metrics.check("file", "passed", 0.01)
    families = list(text_string_to_metric_families(metrics.exposition().decode()))
    figures = {f.name for f in families if not f.name.endswith("_created")}  # a counter's start time
    service.runs.close()
    return {s.name for f in families for s in f.samples}, figures


def _exprs(dashboard: dict[str, Any]) -> list[str]:
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def test_the_dashboard_is_a_grafana_dashboard_with_panels_placed_and_queried() -> None:
    dashboard = json.loads(DASHBOARD.read_text("utf-8"))
    assert dashboard["title"] and dashboard["uid"] and isinstance(dashboard["schemaVersion"], int)
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert panel["type"] in {"timeseries", "stat"} and panel["title"]
        assert (
            set(panel["gridPos"]) == {"x", "y", "w", "h"}
            and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        )
        assert panel["targets"] and all(t["refId"] and t["expr"] for t in panel["targets"])


def test_every_query_names_a_figure_the_server_exposes_and_every_figure_is_shown(tmp_path: Path) -> None:
    samples, families = _exposed(tmp_path)
    named = {name for expr in _exprs(json.loads(DASHBOARD.read_text("utf-8"))) for name in NAME.findall(expr)}
    assert named, "the dashboard queries no handrail figure"
    assert named <= samples, f"not exposed: {sorted(named - samples)}"
    shown = {family for family in families if any(n == family or n.startswith(family + "_") for n in named)}
    assert shown == families, f"not shown: {sorted(families - shown)}"
