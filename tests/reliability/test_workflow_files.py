"""Workflow files edited while the server runs: a file read while it is being written
(empty, cut anywhere, cut inside a UTF-8 character) is broken, and its last good
version stays in service; the complete file then replaces it.

tests/catalog/test_live.py covers the rest through a real server: changes served
within a second, a broken edit reported beside the version still served, and a burst
of rewrites (by rename and by truncating writes in place) under a stream of requests,
where every answer is one whole version.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from handrail.catalog import Catalog, Source
from handrail.protocol.core import Protocol
from handrail.service.core import Service

pytestmark = pytest.mark.slow


def workflow(version: str, title: str) -> dict[str, Any]:
    return {
        "id": "alpha",
        "name": "Alpha",
        "description": "A workflow edited while it is served.",
        "version": version,
        "steps": [
            {
                "id": "step-one",
                "title": title,
                "prompt": "Do it. 日本語 and 👍🏽 make some cuts land inside a character.",
                "validationCriteria": [{"type": "regex", "pattern": r"\bdone\b", "message": "Say done"}],
            }
        ],
    }


def test_every_cut_of_a_file_being_written_keeps_the_last_good_version(tmp_path: Path) -> None:
    path = tmp_path / "alpha.json"
    path.write_text(json.dumps(workflow("1.0.0", "One"), indent=2), encoding="utf-8")
    catalog = Catalog([Source("cli", tmp_path)])
    service = Service(catalog)
    assert catalog.reload().get("alpha") is not None

    complete = json.dumps(workflow("2.0.0", "Two"), indent=2, ensure_ascii=False).encode()
    cuts = sorted({0, 1, *range(0, len(complete), 13), *_inside_characters(complete), len(complete) - 1})
    for cut in cuts:
        path.write_bytes(complete[:cut])  # what a reader sees while a writer is part way
        snapshot = catalog.reload()
        entry = snapshot.entries["alpha"]
        assert (entry.workflow.version, entry.stale) == ("1.0.0", True), cut
        assert [d.file for d in snapshot.problems if d.severity == "error"] == [str(path)], cut
        got = service.call("workflow_get", {"id": "alpha"})
        assert (got["version"], got["steps"][0]["title"]) == ("1.0.0", "One"), cut

    path.write_bytes(complete)
    snapshot = catalog.reload()
    assert (snapshot.entries["alpha"].workflow.version, snapshot.entries["alpha"].stale) == ("2.0.0", False)
    assert snapshot.problems == ()


def test_a_file_that_never_compiled_is_left_out_and_the_server_answers(tmp_path: Path) -> None:
    (tmp_path / "alpha.json").write_bytes(json.dumps(workflow("1.0.0", "One")).encode()[:-40])
    protocol = Protocol(Service(Catalog([Source("cli", tmp_path)])))
    protocol.initialized = True
    listing = json.loads(protocol.handle(b'{"jsonrpc":"2.0","id":1,"method":"workflow_list"}') or b"")
    assert listing["result"]["workflows"] == []
    assert [d["code"] for d in listing["result"]["diagnostics"]] == ["H001"]
    missing = json.loads(
        protocol.handle(b'{"jsonrpc":"2.0","id":2,"method":"workflow_get","params":{"id":"alpha"}}') or b""
    )
    assert missing["error"]["code"] == -32001


def _inside_characters(data: bytes) -> set[int]:
    """Offsets that fall between the bytes of one UTF-8 character."""
    return {i for i, byte in enumerate(data) if 0x80 <= byte < 0xC0}
