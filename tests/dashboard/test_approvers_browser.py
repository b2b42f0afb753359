"""Who may approve, in a real headless Chromium: "Waiting for you" and the Approve and
Decline buttons show only for a person the step's rule lets decide."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.http import HttpServer
from tests.runs.test_approvers import TOKENS, bearer, serve_args, waiting_run

pytestmark = pytest.mark.slow


def sign_in(page: Any, http: HttpServer, who: str) -> None:
    page.context.clear_cookies()
    page.goto(http.base + "/signin")
    page.fill("#token", TOKENS[who][0])
    page.click("button[type=submit]")
    page.locator("h1", has_text="Runs").wait_for()


def test_the_approver_sees_the_run_waiting_for_her_and_approves_it_while_its_starter_cannot(
    tmp_path: Path, page: Any
) -> None:
    with HttpServer(*serve_args(tmp_path)) as http:
        run_id = waiting_run(http, "hotfix", "patch", starter="erin")
        sign_in(page, http, "erin")  # started it; the step names alice
        page.goto(f"{http.base}/runs/{run_id}")
        assert page.locator("#approve").count() == 0 and page.locator("#decline").count() == 0
        assert "approvers: erin" in page.locator("#not-yours").inner_text()
        page.goto(http.base + "/")
        assert page.locator("#waiting").count() == 0
        sign_in(page, http, "alice")
        waiting = page.locator(f"#waiting li[data-run='{run_id}']")
        assert "started by erin" in waiting.inner_text()
        waiting.locator("a").click()
        page.locator("#approve").wait_for()
        page.fill("#comment", "Ship it")
        page.click("#approve")
        assert page.locator(".note").inner_text() == "Approved."
        status = http.client.get(f"{http.base}/api/runs/{run_id}", headers=bearer("erin")).json()["status"]
        assert status == "active"
        assert page.errors == []
