"""What a run below another keeps of the server that started the tree (spec/runs.md,
"Runs in a tree"): the approval channels it took, so a second server cannot approve a
branch's step through a channel the first refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from handrail.catalog import load_catalog
from handrail.model.errors import HandrailError
from handrail.model.request import LOCAL
from handrail.runs import Runs
from handrail.runs.ledger import RunSettings
from handrail.store import open_store
from tests.runs.workflows import review_files, write


def test_a_branch_keeps_the_approval_channels_of_the_server_that_started_its_run(tmp_path: Path) -> None:
    flow = review_files(max_parallel=2)
    flow["steps"][1]["body"][1]["requireConfirmation"] = True  # `note` waits for a person
    write(tmp_path / "flows", flow)
    snap = load_catalog(tmp_path / "flows", bundled=False).snapshot()
    url = "sqlite:///" + str(tmp_path / "runs.db").lstrip("/")
    cli_only = Runs(lambda: open_store(url), RunSettings(approval_channels=frozenset({"cli"})))
    every_channel = Runs(lambda: open_store(url))
    try:
        parent = cli_only.start(LOCAL, snap.get("review-files"), "Review", str(tmp_path), {})["runId"]
        waiting = cli_only.continue_(LOCAL, snap, parent, "collect", "Files.", {"files": ["a.py"]})
        branch = waiting["branches"][0]["runId"]
        cli_only.continue_(LOCAL, snap, branch, "review", "Reviewed a.py", None)
        cli_only.continue_(LOCAL, snap, branch, "note", "Noted", None)
        assert cli_only.store.get(branch).status.value == "awaiting_approval"  # type: ignore[union-attr]
        with pytest.raises(HandrailError) as refused:
            every_channel.decide(LOCAL, branch, "approve", person="local", via="dashboard")
        assert "dashboard" in str(refused.value)
        started = next(e for e in every_channel.store.events(branch) if e.type == "started")
        assert started.data["approvalChannels"] == ["cli"]
        assert every_channel.store.get(branch).status.value == "awaiting_approval"  # type: ignore[union-attr]
    finally:
        cli_only.close()
        every_channel.close()
