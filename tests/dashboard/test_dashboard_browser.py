"""The dashboard in a real headless Chromium, against a real `handrail serve` whose
runs are started and moved over MCP (JSON-RPC over HTTP)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.http import HttpServer
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

pytestmark = pytest.mark.slow

TOKEN = "s3cret-token-for-the-dashboard"


def start(http: HttpServer, goal: str, **headers: str) -> str:
    reply = http.rpc(
        "workflow_start",
        {"workflowId": WORKFLOW_ID, "goal": goal, "context": {"parts": ["wheel", "brake"]}},
        headers=headers or None,
    )
    run_id: str = reply["result"]["runId"]
    return run_id


def submit(http: HttpServer, run_id: str, step: str, output: str) -> dict[str, Any]:
    reply: dict[str, Any] = http.rpc(
        "workflow_continue", {"runId": run_id, "stepId": step, "output": output}
    )["result"]
    return reply


def test_the_list_shows_a_run_started_over_mcp_and_updates_when_it_moves(
    server: HttpServer, page: Any
) -> None:
    page.goto(server.base + "/")
    assert page.locator("#empty").is_visible()
    run_id = start(server, "Build the bicycle")
    row = page.locator(f"tr[data-run='{run_id}']")
    row.wait_for()  # no reload: the page polls the JSON API
    assert "Build the bicycle" in row.inner_text()
    assert "plan" in row.locator("td").nth(3).inner_text()
    submit(server, run_id, "plan", "Plan: wheel, then brake.")
    page.wait_for_function(
        "id => document.querySelector(`tr[data-run='${id}'] td:nth-child(4)`).textContent.includes('build')",
        arg=run_id,
    )
    page.select_option("select[name=status]", "completed")
    page.click("text=Filter")
    page.wait_for_load_state()
    assert page.locator(f"tr[data-run='{run_id}']").count() == 0
    assert page.errors == []


def test_a_runs_page_shows_its_rejected_attempt_with_the_issues_and_an_output_with_script_as_text(
    server: HttpServer, page: Any
) -> None:
    run_id = start(server, "Audit me")
    hostile = '<script>window.pwned = 1</script>\n\n**no plan** <img src=x onerror="window.pwned=2">'
    rejected = submit(server, run_id, "plan", hostile)
    assert rejected["accepted"] is False
    submit(server, run_id, "plan", "Plan: first the wheel.\n\n- wheel\n- brake")
    long = "Built the wheel.\n\n" + "\n".join(f"- spoke {n} tightened" for n in range(60))
    assert submit(server, run_id, "build", long)["accepted"] is True
    page.goto(f"{server.base}/runs/{run_id}")
    folded = page.locator("[data-step='build'] details.output")
    assert folded.count() == 1 and folded.get_attribute("open") is None  # long: folded
    assert not folded.locator("li").first.is_visible()
    folded.locator("summary").click()
    assert folded.locator("li").first.is_visible()
    rejected_event = page.locator(".event-rejected")
    assert "Start the plan with 'Plan:'" in rejected_event.locator(".issues").inner_text()
    text = rejected_event.locator(".output").inner_text()
    assert "<script>window.pwned = 1</script>" in text and "<img src=x" in text
    assert rejected_event.locator(".output script, .output img").count() == 0
    assert rejected_event.locator(".output strong").inner_text() == "no plan"  # Markdown still renders
    assert page.locator("[data-step='plan'] .event-accepted .output li").all_inner_texts() == [
        "wheel",
        "brake",
    ]
    assert page.evaluate("window.pwned") is None
    page.locator(".graph svg").wait_for()  # Mermaid, from the package, drew the path
    assert page.locator(".graph svg .visited").count() >= 1
    assert page.errors == []


def test_without_a_token_the_page_asks_for_one_and_then_shows_the_runs(tmp_path: Path, page: Any) -> None:
    write(tmp_path / "flows", build_feature())
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    args = ("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", database)
    with HttpServer(*args, env={"HANDRAIL_TOKEN": TOKEN}) as http:
        run_id = start(http, "Behind a token", Authorization=f"Bearer {TOKEN}")
        assert http.client.get(http.base + "/api/runs").status_code == 401
        page.goto(http.base + "/")
        assert page.url.startswith(http.base + "/signin")
        page.fill("#token", "not-the-token")
        page.click("button[type=submit]")
        assert "not valid" in page.locator(".error").inner_text()
        page.fill("#token", TOKEN)
        page.click("button[type=submit]")
        page.locator(f"tr[data-run='{run_id}']").wait_for()
        (cookie,) = page.context.cookies()
        assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
        assert TOKEN not in cookie["value"]
        assert page.evaluate("document.cookie") == ""  # scripts cannot read the session


def gated(program: str) -> dict[str, Any]:
    """Tests that must pass (a command check), then a step a person must approve."""
    script = (
        "import os, sys; passed = os.path.exists('ok'); "
        "print('3 passed' if passed else 'FAILED test_login: 401 != 200'); sys.exit(0 if passed else 1)"
    )
    return {
        "id": "gated",
        "name": "Gated release",
        "description": "Tests, then a person approves the release.",
        "version": "1.0.0",
        "steps": [
            {
                "id": "tests",
                "title": "Make the tests pass",
                "prompt": "Fix the tests.",
                "checks": [{"type": "command", "run": [program, "-c", script], "message": "The tests pass"}],
            },
            {"id": "ship", "title": "Ship", "prompt": "Ship it.", "requireConfirmation": True},
            {"id": "announce", "title": "Announce", "prompt": "Announce it."},
        ],
    }


def test_approve_on_the_run_page_lets_the_agents_next_continue_go_on_and_the_page_shows_the_check(
    tmp_path: Path, page: Any
) -> None:
    write(tmp_path / "flows", gated(sys.executable))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    args = (
        "--no-bundled",
        "--workflows",
        str(tmp_path / "flows"),
        "--database",
        database,
        "--allow-commands",
    )
    with HttpServer(*args) as http:
        started = http.rpc(
            "workflow_start", {"workflowId": "gated", "goal": "Release 2.0", "workspace": str(workspace)}
        )
        run_id = started["result"]["runId"]
        failed = submit(http, run_id, "tests", "All green, trust me.")
        assert failed["accepted"] is False
        (workspace / "ok").write_text("")
        assert submit(http, run_id, "tests", "Fixed the login test.")["accepted"] is True
        waiting = submit(http, run_id, "ship", "Tagged v2.0; ready to publish.")
        assert waiting["status"] == "awaiting_approval"

        page.goto(http.base + "/")
        assert "awaiting" in (page.locator(f"tr[data-run='{run_id}']").get_attribute("class") or "")
        page.click(f"tr[data-run='{run_id}'] a")
        rejected = page.locator(".event-rejected")
        assert "The tests pass" in rejected.locator(".issues").inner_text()
        failing = page.locator(".event-check").first
        assert "exit code 1" in failing.inner_text()
        assert "FAILED test_login: 401 != 200" in failing.locator(".tail").inner_text()
        assert "3 passed" in page.locator(".event-check").nth(1).locator(".tail").inner_text()

        page.fill("#comment", "Ship it <b>now</b>")
        page.click("#approve")
        page.locator(".note").wait_for()
        assert page.locator(".note").inner_text() == "Approved."
        assert page.locator("#approval").count() == 0
        approved = page.locator(".event-approved")
        assert "Ship it <b>now</b>" in approved.inner_text()  # the comment, as text
        show = ("runs", "show", run_id, "--format", "json", "--database", database)
        shown = subprocess.run(
            [sys.executable, "-m", "handrail", *show],
            capture_output=True,
            text=True,
            timeout=60,
        )
        (decision,) = [e for e in json.loads(shown.stdout)["events"] if e["type"] == "approved"]
        assert decision["via"] == "dashboard" and decision["comment"] == "Ship it <b>now</b>"

        goes_on = http.rpc("workflow_continue", {"runId": run_id, "stepId": "ship"})["result"]
        assert goes_on["accepted"] is True and goes_on["step"]["id"] == "announce"
        assert "Now: Announce" in page.locator(".timeline").inner_text()
        assert submit(http, run_id, "announce", "Announced.")["status"] == "completed"
        page.locator(".facts .status-completed").wait_for()  # the open page follows the run by itself
        assert "Announced." in page.locator("[data-step='announce']").inner_text()
        assert page.errors == []


def test_the_workflows_page_draws_each_graph_and_lists_the_broken_files(tmp_path: Path, page: Any) -> None:
    write(tmp_path / "flows", build_feature())
    (tmp_path / "flows" / "broken.json").write_text('{"id": "broken", "steps": 3}', "utf-8")
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    with HttpServer("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", database) as http:
        page.goto(http.base + "/workflows")
        problems = page.locator(".problems")
        assert "Broken files (1)" in problems.locator("h2").inner_text()
        assert problems.locator("h3").inner_text().endswith("broken.json")
        assert (
            "H102" in problems.inner_text() and "expected an array, found a number" in problems.inner_text()
        )
        workflow = page.locator(f"#wf-{WORKFLOW_ID}")
        assert "Build a feature" in workflow.locator("h2").inner_text()
        workflow.locator("summary").click()
        workflow.locator("svg").wait_for()  # drawn when unfolded, by the packaged Mermaid
        assert "Each part" in (workflow.locator("svg").text_content() or "")
        assert page.errors == []
