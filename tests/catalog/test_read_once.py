"""A workflow file's bytes are hashed once and parsed once on the way in: listed,
compiled and served by the catalog, then pinned by the run started on it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any
from unittest.mock import patch

import orjson

from handrail import internals
from handrail.catalog import load_catalog
from handrail.service.core import Service

WORKFLOW = {
    "id": "read-once",
    "name": "Read once",
    "description": "One file, followed from its bytes to a run.",
    "version": "1.0.0",
    "steps": [
        {"id": "first", "title": "First", "prompt": "Do the first thing."},
        {"id": "second", "title": "Second", "prompt": "Then the second."},
    ],
}


def test_a_files_bytes_are_hashed_once_and_parsed_once_from_loading_to_a_started_run(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "flows"
    folder.mkdir()
    text = json.dumps(WORKFLOW, indent=2)  # not the compact form the compiled workflow keeps
    (folder / "read-once.json").write_text(text, "utf-8")
    body = text.encode()
    hashed: list[bytes] = []
    parsed: list[bytes] = []
    loads = orjson.loads

    def counting(sha256: Any) -> Any:
        def counting_sha256(data: Any = b"", **kwargs: Any) -> Any:
            hashed.append(bytes(data))
            return sha256(data, **kwargs)

        return counting_sha256

    def counting_loads(data: Any) -> Any:
        parsed.append(data.encode() if isinstance(data, str) else bytes(data))
        return loads(data)

    with (  # the revision is CPython's own SHA-256 (internals.sha256), the content hash hashlib's
        patch("hashlib.sha256", counting(hashlib.sha256)),
        patch("handrail.internals.sha256", counting(internals.sha256)),
        patch("orjson.loads", counting_loads),
    ):
        service = Service(load_catalog(folder, bundled=False))
        try:
            run = service.call(
                "workflow_start", {"workflowId": "read-once", "goal": "Go", "workspace": str(tmp_path)}
            )
            workflow = service.catalog.snapshot().get("read-once")
        finally:
            service.close()
    assert run["step"]["id"] == "first"
    assert workflow is not None and workflow.document != body
    assert hashed.count(body) == 1  # its revision
    assert hashed.count(workflow.document) == 1  # its content hash, which the run is pinned to
    assert parsed.count(body) == 1
