"""A run moved to a newer version (`handrail runs migrate`), as its dashboard page shows
it: in a real headless Chromium against a real `handrail serve`."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from handrail.cli import main
from tests.dashboard.test_dashboard_browser import start, submit
from tests.dashboard.test_dashboard_reading import serve
from tests.runs.workflows import build_feature, write

pytestmark = pytest.mark.slow


def test_the_run_page_says_in_words_which_versions_a_run_moved_between_and_what_was_renamed(
    tmp_path: Path, page: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    flows = tmp_path / "flows"
    write(flows, build_feature())
    with serve(tmp_path) as http:
        run_id = start(http, "Build the bicycle")
        assert submit(http, run_id, "plan", "Plan: wheel, then brake.")["step"]["id"] == "build"
        newer = copy.deepcopy(build_feature(version="2.0.0"))
        newer["steps"][1]["body"][0]["id"] = "make"
        write(flows, newer)
        database = f"sqlite:///{tmp_path / 'runs.db'}"
        sources = ["--workflows", str(flows), "--no-bundled", "--database", database]
        code = main(["runs", "migrate", run_id, "--to", "2.0.0", "--map", "build=make", *sources])
        assert code == 0, capsys.readouterr()
        page.goto(f"{http.base}/runs/{run_id}")
        said = page.locator(".timeline .event-migrated .migrated").inner_text()
        assert said.startswith("moved from version 1.0.0 to 2.0.0, at step make; renamed build → make; by ")
        assert page.locator(".timeline article.current h3").inner_text() == "Now: Build a part make"
        assert page.errors == []
