"""Did-you-mean over a large catalog: `handrail start` with more workflows than
difflib compares one by one still suggests the close ids for an unknown one."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest

from handrail.catalog.suggest import EXACT_UP_TO, close_matches
from tests.helpers.server import Server

pytestmark = pytest.mark.slow


def test_an_unknown_id_in_a_large_catalog_gets_the_close_ids_suggested(tmp_path: Path) -> None:
    folder = tmp_path / "wf"
    folder.mkdir()
    count = EXACT_UP_TO + 100
    for index in range(count):
        document = {
            "id": f"task-{index:05d}",
            "name": "Task",
            "description": "A task.",
            "version": "1.0.0",
            "steps": [{"id": "only-step", "title": "Only step", "prompt": "Do it."}],
        }
        (folder / f"{index}.json").write_text(json.dumps(document), "utf-8")
    (folder / "review.json").write_text(json.dumps({**document, "id": "security-review-checklist"}), "utf-8")
    ids = [f"task-{index:05d}" for index in range(count)] + ["security-review-checklist"]
    with Server("--no-bundled", "--workflows", str(folder)) as server:
        server.initialize()
        for word in ("security-reveiw-checklist", "task-0o042"):
            error = server.request("workflow_get", {"id": word})["error"]
            assert error["code"] == -32001
            assert error["data"]["didYouMean"] == difflib.get_close_matches(word, ids, n=3, cutoff=0.5)


def test_the_shortlist_keeps_what_difflib_would_suggest_for_a_typo() -> None:
    names = {f"{kind}-{index:05d}": None for index in range(5000) for kind in ("alpha", "beta")}
    for word in ("alpah-00123", "beta-0123", "bta-04999"):
        assert (
            close_matches(word, names)[0] == difflib.get_close_matches(word, list(names), n=3, cutoff=0.5)[0]
        )
