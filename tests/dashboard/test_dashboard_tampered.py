"""A run whose row was edited past handrail is marked as tampered on the dashboard, with
what differs: on the runs list (the row against its seal, as every read checks it)
and on the run's page (the seal, and the row against its events replayed, which an
edit sealed again does not escape). Served by a real `handrail serve`, read over HTTP
and, for the list that the page redraws itself, in a real headless Chromium."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from handrail.store.open import open_store
from handrail.store.rows import sealed
from tests.dashboard.test_dashboard_browser import start, submit
from tests.helpers.http import HttpServer

pytestmark = pytest.mark.slow


def moved_ahead(database: Path, run_id: str) -> None:
    """The row's current step moved on to the report, past the parts, with sqlite3."""
    with sqlite3.connect(database) as db:
        (text,) = db.execute("SELECT position FROM runs WHERE id = ?", (run_id,)).fetchone()
        position = json.loads(text)
        position["step"] = {**position["step"], "id": "report", "title": "Report"}
        db.execute("UPDATE runs SET position = ? WHERE id = ?", (json.dumps(position), run_id))
    db.close()


def sealed_again(database: Path, run_id: str) -> None:
    """The row's seal made again over the edited row, with the store's own function."""
    store = open_store(f"sqlite:///{database}")
    try:
        run = store.get(run_id)
        assert run is not None
        seal = sealed(run, run.head, run.events)
    finally:
        store.close()
    with sqlite3.connect(database) as db:
        db.execute("UPDATE runs SET seal = ? WHERE id = ?", (seal, run_id))
    db.close()


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_an_edited_row_is_marked_tampered_on_the_list_and_its_page_and_an_intact_one_is_not(
    served: tuple[HttpServer, Path],
) -> None:
    http, database = served
    edited, intact = start(http, "Edited"), start(http, "Intact")
    submit(http, edited, "plan", "Plan: wheel, then brake.")
    moved_ahead(database, edited)
    with httpx.Client(base_url=http.base, follow_redirects=True) as browser:
        listing = browser.get("/")
        rows = {m[0]: m[1] for m in re.findall(r'data-run="(run_\w+)"(.*?)</tr>', listing.text, re.S)}
        assert "tampered: position is not as sealed" in text_of(rows[edited])
        assert "tampered" not in rows[intact]
        shown = {r["runId"]: r for r in browser.get("/api/runs").json()["runs"]}
        assert shown[edited]["tampered"] == ["position is not as sealed"] and "tampered" not in shown[intact]
        page = browser.get(f"/runs/{edited}")
        assert page.status_code == 200
        mark = re.search(r'<p class="tampered-mark" id="tampered"[^>]*>(.*?)</p>', page.text, re.S)
        assert mark is not None and "position is not as sealed" in text_of(mark[1])
        assert 'id="tampered"' not in browser.get(f"/runs/{intact}").text


def test_a_row_edited_and_sealed_again_is_marked_on_its_page_naming_what_its_events_do_not_give(
    served: tuple[HttpServer, Path],
) -> None:
    http, database = served
    run_id = start(http, "Sealed again")
    submit(http, run_id, "plan", "Plan: wheel, then brake.")
    moved_ahead(database, run_id)
    sealed_again(database, run_id)
    with httpx.Client(base_url=http.base, follow_redirects=True) as browser:
        page = browser.get(f"/runs/{run_id}")
    mark = re.search(r'<p class="tampered-mark" id="tampered"[^>]*>(.*?)</p>', page.text, re.S)
    assert mark is not None
    said = text_of(mark[1])
    assert "the run row is not what its events give" in said
    assert "position is at step `report` in the row, at `build` by its events" in said.replace("&#96;", "`")


def test_the_list_the_page_redraws_keeps_the_mark(served: tuple[HttpServer, Path], page: Any) -> None:
    http, database = served
    run_id = start(http, "Redrawn")
    moved_ahead(database, run_id)
    page.goto(http.base + "/")
    row = page.locator(f'tr[data-run="{run_id}"]')
    assert "position is not as sealed" in row.locator(".tampered-mark").inner_text()
    page.evaluate("document.querySelector('.tampered-mark').remove()")  # drawn again by the page's poll
    row.locator(".tampered-mark").wait_for(timeout=10_000)
    assert row.get_attribute("class") == "run tampered"
    assert page.errors == []
