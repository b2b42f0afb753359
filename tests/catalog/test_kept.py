"""A listed file's bytes, kept until it is checked: as read while a server's first listing
has room for them (its first answer then waits for no compression), else compressed; either
way the same bytes come back, and they still make the file's last good version."""

from __future__ import annotations

import json
from pathlib import Path

from handrail.catalog import Catalog, Source
from handrail.catalog.files import Kept, Read


def test_a_file_s_kept_bytes_come_back_the_same_kept_as_read_or_compressed() -> None:
    data = Read.of(json.dumps({"id": "alpha", "steps": ["x" * 50] * 40}).encode())
    as_read, compressed = Kept.of(data, raw=True), Kept.of(data, raw=False)
    assert (as_read.data, as_read.packed) == (data.data, False)
    assert compressed.packed and len(compressed.data) < len(data.data)
    assert as_read.unpacked() == compressed.unpacked() == data.data
    assert as_read.revision == compressed.revision == data.revision


def test_a_file_broken_before_the_first_listing_is_checked_serves_the_version_that_listing_kept(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.json"
    document = {
        "id": "alpha",
        "name": "Alpha",
        "description": "The alpha workflow.",
        "version": "1.0.0",
        "steps": [{"id": "one", "title": "One", "prompt": "Do it."}],
    }
    path.write_text(json.dumps(document), encoding="utf-8")
    catalog = Catalog([Source("cli", tmp_path)], interval=0)
    try:
        assert [w.id for w in catalog.summaries()] == ["alpha"]  # a server's first listing: nothing compiled
        path.write_text(json.dumps({**document, "version": "2.0.0", "steps": "not a list"}), encoding="utf-8")
        entry = catalog.reload().entries["alpha"]
        assert entry.stale and entry.workflow.version == "1.0.0"
    finally:
        catalog.close()
