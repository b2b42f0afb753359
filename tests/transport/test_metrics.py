"""`handrail serve --metrics`: a real server, real MCP traffic (tools, a run started and
continued, a file check failing then passing, an approval left waiting), then /metrics
scraped and read with the Prometheus client's own parser; the token rules of /mcp hold
for it, or --metrics-token's; without --metrics there is no /metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.http import HttpServer

pytestmark = pytest.mark.slow

FLOW = "measured"
STEPS = [
    {
        "id": "notes",
        "title": "Notes",
        "prompt": "Write notes.md.",
        "checks": [{"type": "file", "path": "notes.md", "message": "The notes are written"}],
    },
    {"id": "ship", "title": "Ship", "prompt": "Ship it.", "requireConfirmation": True},
]


def _flows(tmp: Path) -> Path:
    flows = tmp / "flows"
    flows.mkdir()
    document = {"id": FLOW, "name": "Measured", "description": "Metrics.", "version": "1.0.0", "steps": STEPS}
    (flows / f"{FLOW}.json").write_text(json.dumps(document))
    (flows / "broken.json").write_text("{ not json")
    return flows


def _call(http: HttpServer, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = http.rpc("tools/call", {"name": name, "arguments": arguments})
    result: dict[str, Any] = answer["result"]
    return result


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a scrape, by its name and labels."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_a_scrape_after_real_traffic_counts_requests_checks_runs_approvals_and_the_catalog(
    tmp_path: Path,
) -> None:
    flows = _flows(tmp_path)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    with HttpServer("--no-bundled", "--workflows", str(flows), "--database", database, "--metrics") as http:
        assert "tools" in http.rpc("tools/list", {})["result"]
        run = _call(http, "workflow_start", {"workflowId": FLOW, "goal": "Ship", "workspace": str(workspace)})
        run_id = run["structuredContent"]["runId"]
        step = {"runId": run_id, "stepId": "notes", "output": "Written."}
        refused = _call(http, "workflow_continue", step)
        assert refused["structuredContent"]["accepted"] is False  # no notes.md yet: the check fails
        (workspace / "notes.md").write_text("notes")
        assert _call(http, "workflow_continue", step)["structuredContent"]["accepted"] is True
        waiting = _call(http, "workflow_continue", {"runId": run_id, "stepId": "ship", "output": "Shipped."})
        assert waiting["structuredContent"]["status"] == "awaiting_approval"
        _call(http, "workflow_start", {"workflowId": FLOW, "goal": "Left open", "workspace": str(workspace)})
        missing = _call(http, "workflow_continue", {"runId": "no-such-run", "stepId": "notes", "output": "x"})
        assert missing["isError"] is True
        assert "error" in http.rpc("no/such/method", {})  # not a handler: not counted
        scraped = http.client.get(f"{http.base}/metrics")
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = _samples(scraped.text)
    count = "handrail_requests_total"
    assert _value(samples, count, method="tools/list", tool="", outcome="ok") == 1
    assert _value(samples, count, method="tools/call", tool="workflow_start", outcome="ok") == 2
    assert _value(samples, count, method="tools/call", tool="workflow_continue", outcome="ok") == 3
    assert _value(samples, count, method="tools/call", tool="workflow_continue", outcome="tool_error") == 1
    latency = "handrail_request_duration_seconds_count"
    assert _value(samples, latency, method="tools/call", tool="workflow_continue") == 4
    assert _value(samples, "handrail_checks_total", kind="file", outcome="failed") == 1
    assert _value(samples, "handrail_checks_total", kind="file", outcome="passed") == 1
    assert _value(samples, "handrail_check_duration_seconds_count", kind="file") == 2
    assert _value(samples, "handrail_runs", status="awaiting_approval") == 1
    assert _value(samples, "handrail_runs", status="active") == 1
    assert _value(samples, "handrail_runs", status="completed") == 0
    assert _value(samples, "handrail_approvals_waiting") == 1
    assert 0 <= _value(samples, "handrail_approval_oldest_wait_seconds") < 600
    assert _value(samples, "handrail_catalog_workflows") == 1
    assert _value(samples, "handrail_catalog_broken_files") == 1
    assert _value(samples, "handrail_store_retries_total") == 0
    assert _value(samples, "handrail_store_errors_total") == 0
    assert _value(samples, "handrail_store_up") == 1


def test_metrics_ask_for_the_token_mcp_asks_for(tmp_path: Path) -> None:
    with HttpServer("--no-bundled", "--metrics", env={"HANDRAIL_TOKEN": "s3cret"}) as http:
        without = http.client.get(f"{http.base}/metrics")
        wrong = http.client.get(f"{http.base}/metrics", headers={"Authorization": "Bearer nope"})
        right = http.client.get(f"{http.base}/metrics", headers={"Authorization": "Bearer s3cret"})
        elsewhere = http.client.get(
            f"{http.base}/metrics", headers={"Authorization": "Bearer s3cret", "Host": "evil.example"}
        )
    assert without.status_code == 401 and "bearer token is required" in without.text
    assert wrong.status_code == 401
    assert right.status_code == 200 and "handrail_requests" in right.text
    assert elsewhere.status_code == 403


def test_a_metrics_token_is_the_one_a_scraper_sends(tmp_path: Path) -> None:
    args = ("--no-bundled", "--metrics", "--metrics-token", "scrape-only")
    with HttpServer(*args, env={"HANDRAIL_TOKEN": "s3cret"}) as http:
        mcp_token = http.client.get(f"{http.base}/metrics", headers={"Authorization": "Bearer s3cret"})
        own = http.client.get(f"{http.base}/metrics", headers={"Authorization": "Bearer scrape-only"})
        tools = http.rpc("tools/list", {}, headers={"Authorization": "Bearer scrape-only"})
    assert mcp_token.status_code == 401
    assert own.status_code == 200
    assert "error" in tools  # the scraper's token opens /metrics, not /mcp


def test_without_metrics_there_is_no_metrics_page(tmp_path: Path) -> None:
    with HttpServer("--no-bundled") as http:
        assert http.client.get(f"{http.base}/metrics").status_code == 404
