"""The run page, in a real headless Chromium, says whether the run's hash chain holds,
and names the first broken link once a row is edited behind the server's back."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.test_dashboard_browser import start, submit
from tests.helpers.http import HttpServer

pytestmark = pytest.mark.slow


def test_the_run_page_says_verified_then_names_the_event_an_edit_broke(
    served: tuple[HttpServer, Path], page: Any
) -> None:
    http, database = served
    run_id = start(http, "Keep a record")
    submit(http, run_id, "plan", "Plan: wheel, then brake.")
    page.goto(f"{http.base}/runs/{run_id}")
    chain = page.locator("#chain")
    assert chain.locator(".chain-verified").inner_text() == "verified"
    assert "2 events" in chain.inner_text()
    with sqlite3.connect(database) as db:
        db.execute(
            "UPDATE run_events SET data = ? WHERE run_id = ? AND seq = 2",
            ('{"output": "Plan: something else."}', run_id),
        )
    page.reload()
    broken = page.locator("#chain .chain-broken")
    assert broken.get_attribute("data-seq") == "2"
    assert broken.inner_text().startswith("broken at event 2: event 2 (accepted) does not match its hash")
    assert page.locator("#chain .chain-verified").count() == 0
    assert page.errors == []
