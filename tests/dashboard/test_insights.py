"""The Insights page in a real headless Chromium, against a real `handrail serve` whose
runs were moved over MCP: the step graph coloured by rejection rate, the funnel, the
step table, the top issues linking to a run that shows them; readable without JavaScript."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from handrail.dashboard.insights import rate_colour
from tests.dashboard.browser import picture
from tests.dashboard.test_dashboard_browser import start, submit
from tests.helpers.http import HttpServer
from tests.runs.workflows import WORKFLOW_ID

pytestmark = pytest.mark.slow


def three_runs(http: HttpServer) -> str:
    """One completed after two rejections, one abandoned while building, one still at
    the plan; returns the run that showed the plan's issue."""
    done = start(http, "Build the bicycle")
    submit(http, done, "plan", "no plan yet")
    submit(http, done, "plan", "Plan: wheel, then brake.")
    submit(http, done, "build", "Built the wheel.")
    submit(http, done, "build", "the brake is hard")
    submit(http, done, "build", "Built the brake.")
    submit(http, done, "report", "Both parts built.")
    left = start(http, "Build the tandem")
    submit(http, left, "plan", "Plan: two seats.")
    submit(http, left, "build", "not yet")
    http.rpc("workflow_abandon", {"runId": left, "reason": "out of parts"})
    waiting = start(http, "Build the unicycle")
    submit(http, waiting, "plan", "one wheel")
    return waiting


def test_the_insights_page_draws_the_graph_funnel_table_and_issues_of_runs_made_over_mcp(
    server: HttpServer, page: Any
) -> None:
    three_runs(server)
    page.goto(server.base + "/insights")
    version = page.locator(f"#wf-{WORKFLOW_ID}-1\\.0\\.0")
    version.wait_for()
    assert "3 started · 1 completed · 1 abandoned · 1 active" in version.locator("h3").inner_text()
    # plan: 2 of 4 submissions rejected; build: 2 of 4
    plan = version.locator(".step-graph .step-node[data-step='plan']")
    assert plan.get_attribute("data-rate") == "0.5"
    assert plan.locator("rect").get_attribute("fill") == rate_colour(0.5)
    report = version.locator(".step-graph .step-node[data-step='report']")
    assert report.get_attribute("data-rate") == "0.0"
    assert report.locator("rect").get_attribute("fill") == rate_colour(0.0) != rate_colour(0.5)
    funnel = {
        row.get_attribute("data-step"): row.get_attribute("data-reached")
        for row in version.locator(".funnel .funnel-row").all()
    }
    assert funnel == {"started": "3", "plan": "3", "build": "2", "report": "1"}
    cells = version.locator(".insight-steps tr[data-step='build'] td").all_inner_texts()
    assert cells[:5] == ["build", "2", "1", "1", "50%"]
    issue = version.locator(".top-issues li", has_text="Start the plan with 'Plan:'")
    assert "×2" in issue.inner_text()
    picture(page, "insights.png")
    issue.locator("a").click()
    page.wait_for_url("**/runs/run_*")
    assert "Start the plan with" in page.locator("main").inner_text()
    assert page.errors == []


def test_the_insights_page_is_readable_without_javascript(server: HttpServer, browser: Any) -> None:
    three_runs(server)
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(server.base + "/insights")
        text = page.locator("main").inner_text()
        assert "Start the plan with 'Plan:'" in text
        assert page.locator(".step-graph .step-node").count() == 3
        assert page.locator(".funnel").is_visible()
    finally:
        context.close()


def test_each_person_signed_in_sees_the_insights_of_their_own_runs_only(tmp_path: Path) -> None:
    from tests.dashboard.test_dashboard_http import serve_args, signed_in

    alice, bob = "alice-token-0123456789abcdef", "bob-token-fedcba9876543210xyz"
    (tmp_path / "tokens").write_text(f"alice {alice}\nbob {bob}\n", "utf-8")
    with HttpServer(*serve_args(tmp_path), "--tokens", str(tmp_path / "tokens")) as http:
        as_alice = {"Authorization": f"Bearer {alice}"}
        run_id = http.rpc("workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Alice's secret"},
                          headers=as_alice)["result"]["runId"]  # fmt: skip
        http.rpc("workflow_continue", {"runId": run_id, "stepId": "plan", "output": "alice-only text"},
                 headers=as_alice)  # fmt: skip
        bob_client, _ = signed_in(http, bob)
        alice_client, _ = signed_in(http, alice)
        try:
            seen_by_bob = bob_client.get("/insights").text
            seen_by_alice = alice_client.get("/insights").text
        finally:
            bob_client.close()
            alice_client.close()
    assert "No run yet" in seen_by_bob and run_id not in seen_by_bob
    assert "Start the plan with" in seen_by_alice and f"/runs/{run_id}" in seen_by_alice


def test_the_insights_page_shows_what_driven_agents_spent_per_step_and_in_all(tmp_path: Path) -> None:
    import httpx

    from tests.drive.test_driver import RESULT, drive

    # two processes of a stand-in agent at `write`, each reporting $0.25, 9 tokens in and 4 out
    done, _, usage = drive(tmp_path, f"echo '{RESULT}'", "--attempts", "2")
    assert done.returncode == 1 and len(usage) == 2
    url = "sqlite:///" + str(tmp_path / "runs.db").lstrip("/")
    with HttpServer("--no-bundled", "--workflows", str(tmp_path / "workflows"), "--database", url) as http:
        page = httpx.get(http.base + "/insights", timeout=15).text
    rows = re.findall(r'<tr data-usage="([\w-]+)">(.*?)</tr>', page)
    cells = {step: re.findall(r'<td data-label="[^"]+">([^<]*)</td>', row) for step, row in rows}
    assert cells == {"write": ["2", "18", "8", "0.5000"]}
    assert '<td data-label="Cost (USD)" class="usage-total">0.5000</td>' in page
