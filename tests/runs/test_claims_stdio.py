"""Over stdio each `handrail start` process is one agent session: two agents, each
with its own server process on one run store, claim different branches of one parallel
loop, and one is refused the other's branch while its lease lives."""

from __future__ import annotations

from pathlib import Path

import pytest

from handrail.cli import main
from handrail.store import open_store
from tests.helpers.server import Server
from tests.runs.workflows import REVIEW_ID, review_files, write

pytestmark = pytest.mark.slow


def test_two_stdio_agents_claim_different_branches_and_one_is_refused_the_others(tmp_path: Path) -> None:
    write(tmp_path / "flows", review_files(max_parallel=4))
    args = (
        "--no-bundled",
        "--workflows",
        str(tmp_path / "flows"),
        "--database",
        f"sqlite:///{tmp_path / 'r.db'}",
    )
    with Server(*args) as lead, Server(*args) as helper:
        lead.initialize()
        helper.initialize()
        started = lead.call("workflow_start", {"workflowId": REVIEW_ID, "goal": "Review",
                            "workspace": str(tmp_path), "context": {"files": ["a.py", "b.py"]}})  # fmt: skip
        parent = started["structuredContent"]["runId"]
        lead.call("workflow_continue", {"runId": parent, "stepId": "collect", "output": "Two files."})
        mine = lead.call("workflow_claim", {"runId": parent})["structuredContent"]
        theirs = helper.call("workflow_claim", {"runId": parent})["structuredContent"]
        assert (mine["item"], theirs["item"]) == ("a.py", "b.py")
        submit = {"runId": mine["runId"], "stepId": "review", "output": "Reviewed a.py."}
        refused = helper.call("workflow_continue", submit)
        assert refused["isError"] is True and refused["structuredContent"]["code"] == -32013
        assert refused["structuredContent"]["data"]["holderKind"] == "stdio"
        assert "workflow_claim" in refused["content"][0]["text"]  # the fix a model is shown
        accepted = lead.call("workflow_continue", submit)["structuredContent"]
        assert accepted["accepted"] is True and accepted["step"]["id"] == "note"
        shown = lead.call("workflow_resume", {"runId": parent})["structuredContent"]["branches"]
    store = open_store(f"sqlite:///{tmp_path / 'r.db'}")
    try:  # the store keeps the whole session; the tree shows its kind and first 8 characters
        raw = [next(e.data["holder"] for e in store.events(b["runId"]) if e.type == "claimed") for b in shown]
    finally:
        store.close()
    assert [b["holder"] for b in shown] == [r[: len("stdio:") + 8] for r in raw]
    assert all(len(r) > len(b["holder"]) for r, b in zip(raw, shown, strict=True))


def test_another_stdio_agent_is_refused_abandoning_a_held_branch_and_a_person_still_may(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "flows", review_files(max_parallel=4))
    database = f"sqlite:///{tmp_path / 'r.db'}"
    args = ("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", database)
    with Server(*args) as lead, Server(*args) as helper:
        lead.initialize()
        helper.initialize()
        started = lead.call("workflow_start", {"workflowId": REVIEW_ID, "goal": "Review",
                            "workspace": str(tmp_path), "context": {"files": ["a.py", "b.py"]}})  # fmt: skip
        parent = started["structuredContent"]["runId"]
        lead.call("workflow_continue", {"runId": parent, "stepId": "collect", "output": "Two files."})
        mine = lead.call("workflow_claim", {"runId": parent})["structuredContent"]
        theirs = helper.call("workflow_claim", {"runId": parent})["structuredContent"]
        refused = helper.call("workflow_abandon", {"runId": mine["runId"], "reason": "Not mine"})
        assert refused["isError"] is True and refused["structuredContent"]["code"] == -32013
        assert refused["structuredContent"]["data"]["runId"] == mine["runId"]
        still = lead.call("workflow_resume", {"runId": mine["runId"]})["structuredContent"]
        assert still["status"] == "active"
        # the person (the runs CLI names no agent session) may end a branch an agent holds
        ended = main(["runs", "abandon", mine["runId"], "--reason", "Stop", "--database", database])
        assert ended == 0 and "abandoned" in capsys.readouterr().out
        shown = lead.call("workflow_resume", {"runId": mine["runId"]})["structuredContent"]
        assert shown["status"] == "abandoned"
        assert theirs["runId"] != mine["runId"]
