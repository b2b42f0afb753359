"""What a person reads on the dashboard, in a real headless Chromium against a real
`handrail serve`: the approval box, a loop's titles per iteration, the runs list on a
phone, the sign-in page."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.browser import picture
from tests.dashboard.test_dashboard_browser import TOKEN, start, submit
from tests.helpers.http import HttpServer
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

pytestmark = pytest.mark.slow


def released(program: str) -> dict[str, Any]:
    """One step with a rule, a command check and a person's approval."""
    script = "print('12 passed in 0.4s')"
    return {
        "id": "release",
        "name": "Release",
        "description": "Tag a release a person approves.",
        "version": "1.0.0",
        "steps": [
            {
                "id": "tag",
                "title": "Tag the release",
                "prompt": "Tag it and say which version.",
                "validationCriteria": [
                    {"type": "contains", "value": "v2", "message": "Name the version (v2...)"}
                ],
                "checks": [{"type": "command", "run": [program, "-c", script], "message": "The tests pass"}],
                "requireConfirmation": True,
            },
            {"id": "announce", "title": "Announce", "prompt": "Announce it."},
        ],
    }


def serve(tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> HttpServer:
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    return HttpServer(
        "--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", database, *extra, env=env
    )


def test_the_approval_box_shows_the_output_each_checks_result_and_the_criteria_before_approving(
    tmp_path: Path, page: Any
) -> None:
    write(tmp_path / "flows", released(sys.executable))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with serve(tmp_path, "--allow-commands") as http:
        started = http.rpc(
            "workflow_start", {"workflowId": "release", "goal": "Ship 2.0", "workspace": str(workspace)}
        )
        run_id = started["result"]["runId"]
        output = "Tagged **v2.0.0** <script>window.pwned = 1</script>\n\n- changelog written\n- wheels built"
        assert submit(http, run_id, "tag", output)["status"] == "awaiting_approval"
        page.goto(f"{http.base}/runs/{run_id}")
        box = page.locator("#approval")
        assert box.locator(".submitted .output strong").inner_text() == "v2.0.0"  # Markdown
        assert box.locator(".submitted .output li").all_inner_texts() == ["changelog written", "wheels built"]
        assert "<script>window.pwned = 1</script>" in box.locator(".submitted").inner_text()  # as text
        assert page.evaluate("window.pwned") is None
        check = box.locator(".check-result")
        assert check.count() == 1
        assert "passed: The tests pass" in check.inner_text() and "exit code 0" in check.inner_text()
        assert "12 passed in 0.4s" in check.locator(".tail").inner_text()
        criteria = box.locator(".criteria").inner_text()
        assert "Name the version (v2...)" in criteria
        assert "Tag the release" in box.inner_text()
        picture(box, "dashboard-approval.png")
        page.click("#approve")
        page.locator(".note").wait_for()
        assert page.locator("#approval").count() == 0
        assert page.errors == []
    assert os.path.getsize(Path(__file__).parents[2] / "docs" / "dashboard-approval.png") < 200_000


def looped() -> dict[str, Any]:
    document = build_feature()
    document["steps"][1]["body"][0]["title"] = "Make the {{part}}"
    return document


def test_a_loops_titles_are_shown_for_each_iteration_in_the_recap_the_timeline_and_the_graph(
    tmp_path: Path, page: Any
) -> None:
    write(tmp_path / "flows", looped())
    with serve(tmp_path) as http:
        run_id = start(http, "Build the bicycle")
        submit(http, run_id, "plan", "Plan: wheel, then brake.")
        submit(http, run_id, "build", "Built the wheel.")
        recap = http.rpc("workflow_resume", {"runId": run_id})["result"]["recap"]
        assert [r["title"] for r in recap] == ["Plan", "Make the wheel"]
        page.goto(f"{http.base}/runs/{run_id}")
        titles = page.locator(".timeline article h3").all_inner_texts()
        assert titles == ["Plan plan", "Make the wheel build", "Now: Make the brake build"]
        graph = page.locator(".graph svg")
        graph.wait_for()
        drawn = graph.text_content() or ""
        assert "Make the brake" in drawn and "{{" not in drawn
        # the loop's title is drawn clear of every node (its second line was under the head)
        label = graph.locator(".cluster-label").bounding_box()
        boxes = [n.bounding_box() for n in graph.locator(".node").all()]
        assert label is not None and boxes
        for box in boxes:
            assert (
                label["y"] + label["height"] <= box["y"] + 1
                or box["y"] + box["height"] <= label["y"] + 1
                or label["x"] + label["width"] <= box["x"] + 1
                or box["x"] + box["width"] <= label["x"] + 1
            ), (label, box)
        picture(page.locator(".graph"), "dashboard-loop-graph.png")
        submit(http, run_id, "build", "Built the brake.")
        page.goto(f"{http.base}/runs/{run_id}")
        titles = page.locator(".timeline article h3").all_inner_texts()
        assert titles[1:3] == ["Make the wheel build", "Make the brake build"]  # one block per iteration
        assert page.errors == []


def test_the_runs_list_links_by_goal_says_when_in_words_and_fits_a_390_px_phone(
    tmp_path: Path, page: Any
) -> None:
    write(tmp_path / "flows", build_feature())
    with serve(tmp_path) as http:
        first = start(http, "Build the bicycle with a very long goal that goes on and on about spokes")
        start(http, "Paint the frame")
        page.goto(http.base + "/")
        row = page.locator(f"tr[data-run='{first}']")
        link = row.locator("a")
        assert (
            link.inner_text().startswith("Build the bicycle")
            and link.get_attribute("href") == f"/runs/{first}"
        )
        assert "step 1 of 3" in row.inner_text()
        when = row.locator("time")
        assert when.inner_text() == "just now"
        assert when.get_attribute("datetime") == when.get_attribute("title")
        assert when.get_attribute("title", timeout=1000).startswith("20")
        page.wait_for_timeout(1800)  # the list redraws itself from the API: the same cells
        assert row.locator("time").inner_text() == "just now" and "step 1 of 3" in row.inner_text()
        picture(page, "dashboard-runs.png")
        page.set_viewport_size({"width": 390, "height": 844})
        overflow = page.evaluate("document.scrollingElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page is {overflow} px wider than a 390 px phone"
        picture(page, "dashboard-runs-phone.png")
        page.fill("input[name=q]", "paint")
        page.click("text=Filter")
        page.wait_for_load_state()
        assert page.locator("tr.run").all_inner_texts()[0].startswith("Paint the frame")
        assert page.locator("tr.run").count() == 1
        assert page.errors == []


def test_the_sign_in_page_logs_no_console_error_even_after_a_wrong_token(tmp_path: Path, page: Any) -> None:
    write(tmp_path / "flows", build_feature())
    with serve(tmp_path, env={"HANDRAIL_TOKEN": TOKEN}) as http:
        page.goto(http.base + "/")
        assert page.url.startswith(http.base + "/signin")
        page.fill("#token", "not-the-token")
        page.click("button[type=submit]")
        assert "not valid" in page.locator(".error").inner_text()
        page.fill("#token", TOKEN)
        page.click("button[type=submit]")
        page.locator("#runs").wait_for()
        assert page.errors == []


assert WORKFLOW_ID


def test_a_run_page_draws_its_tree_with_each_branch_its_status_and_holder(tmp_path: Path, page: Any) -> None:
    from tests.runs.workflows import REVIEW_ID, review_files

    write(tmp_path / "flows", review_files(max_parallel=2))
    with serve(tmp_path) as http:
        parent = http.rpc("workflow_start", {"workflowId": REVIEW_ID, "goal": "Review three"})["result"][
            "runId"
        ]
        waiting = http.rpc(
            "workflow_continue",
            {"runId": parent, "stepId": "collect", "output": "Three.", "context": {"files": ["a", "b", "c"]}},
        )["result"]
        first, second = (b["runId"] for b in waiting["branches"][:2])
        submit(http, first, "review", "Reviewed a")
        submit(http, first, "note", "Nothing to note")
        page.goto(f"{http.base}/runs/{parent}")
        tree = page.locator("#tree")
        runs = tree.locator("li.tree-run")
        assert runs.count() == 4  # the parent, the completed branch, and two open (a slot freed)
        assert runs.nth(0).get_attribute("data-run") == parent
        assert "this-run" in (runs.nth(0).get_attribute("class") or "")
        assert "waiting on each-file" in runs.nth(0).inner_text()
        rows = [(r.get_attribute("data-run"), r.get_attribute("data-status")) for r in runs.all()[1:]]
        assert rows[:2] == [(first, "completed"), (second, "active")] and rows[2][1] == "active"
        assert "#1" in runs.nth(2).inner_text() and "held by nobody" in runs.nth(2).inner_text()
        assert '"b"' in runs.nth(2).locator(".item").inner_text()
        runs.nth(2).locator("a").click()
        page.wait_for_url(f"**/runs/{second}")
        assert page.locator("#tree li.this-run").get_attribute("data-run") == second
        assert page.errors == []
