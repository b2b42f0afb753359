"""What a person meets on the dashboard the first time, in a real headless Chromium (or
over HTTP where it is about the markup) against a real `handrail serve`: a banner only
the server words, pages that fit a 390 px phone, times in units, checks by their label,
issue texts with their lines and Markdown, a parallel loop's branches under their run."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.dashboard.browser import picture
from tests.helpers.http import HttpServer
from tests.runs.workflows import REVIEW_ID, review_files, write

pytestmark = pytest.mark.slow

PHONE = {"width": 390, "height": 844}
LONG_ID = "release-the-mobile-application-to-both-app-stores-with-signing"
LONG_STEP = "verify-the-signed-build-artifacts-against-the-release-manifest"
# a check that fails, its output's last lines holding Markdown and a script
FAILING = (
    "import os, sys\n"
    "if os.path.exists('fixed'): sys.exit(0)\n"
    "print('collected 12 items')\n"
    "print('FAILED tests/test_sign.py::test_the_manifest_names_every_artifact_and_its_sha256_digest')\n"
    "print('**2 failed**, 10 passed <script>window.pwned = 1</script>')\n"
    "sys.exit(1)\n"
)


def released(program: str) -> dict[str, Any]:
    """A workflow as people name theirs: a long id, long step ids, a check that fails
    first, a table in the output."""
    return {
        "id": LONG_ID,
        "name": "Release the mobile app",
        "description": "Build, sign, verify and publish.",
        "version": "2.3.0",
        "steps": [
            {"id": "plan-the-release-and-name-every-artifact-to-ship", "title": "Plan", "prompt": "Plan it."},
            {
                "id": LONG_STEP,
                "title": "Verify the artifacts",
                "prompt": "Verify every artifact.",
                "checks": [
                    {
                        "type": "command",
                        "run": [program, "-c", FAILING],
                        "message": "The signing tests pass",
                    },
                    {
                        "type": "command",
                        "run": [program, "-c", "print('12 passed')"],
                        "message": "The whole suite passes",
                    },
                ],
            },
        ],
    }


def serve(tmp_path: Path, *documents: dict[str, Any]) -> HttpServer:
    for document in documents:
        write(tmp_path / "flows", document)
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    return HttpServer(
        "--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", database, "--allow-commands"
    )


def result(http: HttpServer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    reply = http.rpc(method, params)
    assert "result" in reply, reply
    found: dict[str, Any] = reply["result"]
    return found


def long_run(http: HttpServer, workspace: Path) -> str:
    """A run of the long-named workflow: a long output with a wide table, a failed check."""
    run_id = str(
        result(
            http,
            "workflow_start",
            {
                "workflowId": LONG_ID,
                "goal": "Ship 2.3.0 of the app to the App Store and Google Play, signed and notarised",
                "workspace": str(workspace),
            },
        )["runId"]
    )
    table = "| artifact | sha256 | size |\n|---|---|---|\n" + "\n".join(
        f"| app-release-universal-{n}.aab | {'e3b0c44298fc1c149afbf4c8996fb924' * 2} | {n}4 MB |"
        for n in range(8)
    )
    plan = "Plan:\n\n" + table + "\n\n" + "\n".join(f"- step {n}: `{'x' * 90}`" for n in range(30))
    step = "plan-the-release-and-name-every-artifact-to-ship"
    assert result(http, "workflow_continue", {"runId": run_id, "stepId": step, "output": plan})["accepted"]
    refused = result(
        http, "workflow_continue", {"runId": run_id, "stepId": LONG_STEP, "output": "All artifacts verified."}
    )
    assert refused["accepted"] is False
    (workspace / "fixed").write_text("the manifest lists every artifact\n", "utf-8")
    fixed = {"runId": run_id, "stepId": LONG_STEP, "output": "Fixed the manifest."}
    assert result(http, "workflow_continue", fixed)["accepted"]
    return run_id


def fan_out(http: HttpServer, goal: str, files: list[str]) -> tuple[str, list[str]]:
    """A run of the review workflow at its parallel loop: the run and its branches."""
    parent = str(result(http, "workflow_start", {"workflowId": REVIEW_ID, "goal": goal})["runId"])
    waiting = result(
        http,
        "workflow_continue",
        {"runId": parent, "stepId": "collect", "output": "The files.", "context": {"files": files}},
    )
    return parent, [b["runId"] for b in waiting["branches"] if "runId" in b]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[HttpServer, dict[str, Any]]]:
    """A server holding realistic runs: a long one, and two runs of three branches each."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with serve(tmp_path, released(sys.executable), review_files(max_parallel=3)) as http:
        made: dict[str, Any] = {"long": long_run(http, workspace)}
        made["trees"] = [fan_out(http, f"Review batch {n}", ["a.py", "b.py", "c.py"]) for n in (1, 2)]
        _, branches = made["trees"][0]  # the first run's branches all done
        for branch in branches:
            for step, said in (("review", "Reviewed it"), ("note", "Nothing to note")):
                assert result(http, "workflow_continue", {"runId": branch, "stepId": step, "output": said})
        yield http, made


def fits(page: Any) -> int:
    width: int = page.evaluate("document.documentElement.scrollWidth")
    return width


CONFIRMED = {
    "id": "sign-off",
    "name": "Sign off",
    "description": "One step a person approves.",
    "version": "1.0.0",
    "steps": [{"id": "draft", "title": "Draft", "prompt": "Draft it.", "requireConfirmation": True}],
}


def test_a_note_in_the_link_is_never_shown_only_the_servers_words_for_its_code(tmp_path: Path) -> None:
    with serve(tmp_path, CONFIRMED) as http:
        run_id = result(http, "workflow_start", {"workflowId": "sign-off", "goal": "Read me"})["runId"]
        said = {"runId": run_id, "stepId": "draft", "output": "A draft."}
        assert result(http, "workflow_continue", said)["status"] == "awaiting_approval"
        client = httpx.Client(base_url=http.base, timeout=15)
        try:
            planted = "Your run was approved. Call +1-555-0100 to <b>confirm</b> your token"
            page = client.get(f"/runs/{run_id}?note={quote(planted)}")
            assert page.status_code == 200
            assert "555-0100" not in page.text and "your token" not in page.text
            assert 'class="note" role="status"' not in page.text  # no banner at all
            for code, words in (("approved", "Approved."), ("not-waiting", "the run no longer waits")):
                shown = client.get(f"/runs/{run_id}?note={code}").text
                found = re.search(r'<p class="note" role="status">([^<]*)</p>', shown)
                assert found is not None and words in found.group(1), code
            # a decision redirects with a code, never with words
            csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
            assert csrf is not None
            form, origin = {"csrf": csrf.group(1)}, {"Origin": http.base}
            approved = client.post(f"/runs/{run_id}/approve", data=form, headers=origin)
            assert approved.status_code == 303
            assert approved.headers["location"] == f"/runs/{run_id}?note=approved"
            again = client.post(f"/runs/{run_id}/decline", data=form, headers=origin)
            assert again.headers["location"] == f"/runs/{run_id}?note=not-waiting"  # decided already
        finally:
            client.close()


def test_the_runs_list_a_long_run_and_insights_fit_a_390_px_phone(
    world: tuple[HttpServer, dict[str, Any]], browser: Any
) -> None:
    http, made = world
    context = browser.new_context(viewport=PHONE, device_scale_factor=1)
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(http.base + "/")
        page.locator("tr.run").first.wait_for()
        assert page.locator("tr.run").count() == 1 + 2 + 3 + 3
        assert fits(page) <= PHONE["width"], "the runs list scrolls sideways"
        page.goto(f"{http.base}/runs/{made['long']}")
        page.locator(".timeline").wait_for()
        page.locator(".graph svg").wait_for()
        for summary in page.locator("details.output summary").all():
            summary.click()  # the long output unfolded, its table shown
        assert page.locator(".md table").count() >= 1
        assert fits(page) <= PHONE["width"], "a run page with a long output scrolls sideways"
        parent = made["trees"][0][0]
        page.goto(f"{http.base}/runs/{parent}")
        page.locator("#tree").wait_for()
        assert fits(page) <= PHONE["width"], "a run page with a tree scrolls sideways"
        page.goto(http.base + "/insights")
        page.locator(".insight-checks").wait_for()
        assert fits(page) <= PHONE["width"], "the Insights page scrolls sideways"
        assert errors == []
    finally:
        context.close()


def test_insights_name_checks_by_their_label_and_say_times_in_units(
    world: tuple[HttpServer, dict[str, Any]], page: Any
) -> None:
    http, _ = world
    page.goto(http.base + "/insights")
    checks = page.locator(f"#wf-{LONG_ID}-2\\.3\\.0 .insight-checks tbody tr")
    labels = [row.locator(".check-label").inner_text() for row in checks.all()]
    assert labels == ["The signing tests pass", "The whole suite passes"]
    assert f"{LONG_STEP}[0]" not in page.locator("main").inner_text()
    unit = re.compile(r"^(\d+ ms|\d+\.\d s|\d+ s|\d+ min( \d+ s)?|\d+ h( \d+ min)?)$")
    median = checks.first.locator("td[data-label='Median time']").inner_text()
    assert unit.match(median), median
    row = page.locator(f"#wf-{LONG_ID}-2\\.3\\.0 .insight-steps tr[data-step='{LONG_STEP}']")
    p50, p90 = row.locator("td[data-label^='Time to accept']").inner_text().split(" / ")
    assert unit.match(p50) and unit.match(p90), (p50, p90)
    assert page.errors == []


def test_an_issue_text_keeps_its_lines_renders_its_markdown_and_its_script_stays_inert(
    world: tuple[HttpServer, dict[str, Any]], page: Any
) -> None:
    http, made = world
    page.goto(f"{http.base}/runs/{made['long']}")
    issue = page.locator(".event-rejected .issues li").first
    text = issue.inner_text()
    assert text.startswith("The signing tests pass")
    lines = text.splitlines()
    assert "collected 12 items" in lines  # one line each, as the program wrote them
    assert any(line.startswith("FAILED tests/test_sign.py::") for line in lines)
    assert issue.locator("strong").inner_text() == "2 failed"  # its Markdown rendered
    assert "<script>window.pwned = 1</script>" in text  # shown as text, never run
    assert issue.locator("script").count() == 0
    assert page.evaluate("window.pwned") is None
    page.locator(".graph svg").wait_for()
    picture(page, "dashboard-run.png")
    assert page.errors == []


def test_a_runs_branches_are_listed_under_it_and_counted_once_in_the_funnel(
    world: tuple[HttpServer, dict[str, Any]], page: Any
) -> None:
    http, made = world
    (_, _), (second, second_branches) = made["trees"]
    page.goto(http.base + "/")
    rows = page.locator("tr.run")
    rows.first.wait_for()
    # the list redraws itself from the API once a run moves: mark a row, move a branch,
    # and wait for the marked row to have been replaced
    page.evaluate("document.querySelector('tr.run').dataset.drawn = 'server'")
    said = {"runId": second_branches[0], "stepId": "review", "output": "Reviewed a.py"}
    assert result(http, "workflow_continue", said)["accepted"]
    page.wait_for_function("() => !document.querySelector('tr.run').dataset.drawn")
    listed = http.client.get(http.base + "/api/runs").json()["runs"]
    order = [r["runId"] for r in listed]
    for parent, branches in made["trees"]:
        at = order.index(parent)
        assert order[at + 1 : at + 1 + len(branches)] == branches  # right under it, in item order
        assert {r["parentId"] for r in listed if r["runId"] in branches} == {parent}
        assert all(
            r["depth"] == 1 and r["below"].startswith("branch #") for r in listed if r["runId"] in branches
        )
    drawn = [r.get_attribute("data-run") for r in rows.all()]
    assert drawn == order
    under = page.locator(f"tr.run[data-parent='{second}']")
    assert under.count() == 3 and "branch #0 of each-file" in under.first.inner_text()
    assert page.locator("tr.run:not(.below)").count() == 3  # two trees and the long run
    page.goto(http.base + "/insights")
    version = page.locator(f"#wf-{REVIEW_ID}-1\\.0\\.0")
    assert "2 started" in version.locator("h3").inner_text()
    funnel = {
        row.get_attribute("data-step"): int(row.get_attribute("data-reached") or -1)
        for row in version.locator(".funnel .funnel-row").all()
    }
    assert funnel["started"] == 2 and funnel["collect"] == 2
    # both runs' branches reached the review and the note (the second's first branch now
    # stands at it), each run counted once; only the first run's branches are all done
    assert funnel["review"] == 2 and funnel["note"] == 2 and funnel["report"] == 1
    assert page.errors == []


def test_a_finished_branch_shows_no_live_lease(tmp_path: Path, page: Any) -> None:
    with serve(tmp_path, review_files(max_parallel=2)) as http:
        parent, _ = fan_out(http, "Review two", ["a.py", "b.py"])
        claimed = result(http, "workflow_claim", {"runId": parent})
        assert claimed["claimed"] is True and claimed["leaseUntil"]
        done = claimed["runId"]
        for step, said in (("review", "Reviewed it"), ("note", "Nothing to note")):
            result(http, "workflow_continue", {"runId": done, "stepId": step, "output": said})
        held = result(http, "workflow_claim", {"runId": parent})["runId"]  # the other, held open
        page.goto(f"{http.base}/runs/{parent}")
        finished = page.locator(f"#tree li.tree-run[data-run='{done}']")
        assert finished.get_attribute("data-status") == "completed"
        assert "held by" not in finished.inner_text() and "until" not in finished.inner_text()
        live = page.locator(f"#tree li.tree-run[data-run='{held}']").inner_text()
        assert "held by http-connection" in live and "until" in live
        assert page.errors == []
