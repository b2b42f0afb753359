"""The gate over the branches of a parallel loop: a branch protects the workflow
folders of the server that started its run, as the run itself does."""

from __future__ import annotations

import json
from pathlib import Path

from handrail.runs.request import LOCAL
from tests.gate.runs import GateWorld, claude_input

FLOW = {
    "id": "fan-out",
    "name": "Fan out",
    "description": "Plan each item in a branch.",
    "version": "1.0.0",
    "steps": [
        {"id": "collect", "title": "Collect", "prompt": "List the items."},
        {
            "id": "each",
            "type": "loop",
            "title": "Each",
            "loop": {
                "type": "forEach",
                "items": "items",
                "itemVar": "item",
                "maxIterations": 10,
                "parallel": True,
            },
            "body": [{"id": "plan", "title": "Plan {{item}}", "prompt": "Write a plan."}],
        },
        {"id": "report", "title": "Report", "prompt": "Report."},
    ],
}


def _write(world: GateWorld, session: str, path: Path) -> str:
    data = {"file_path": str(path), "content": "{}"}
    event = claude_input(world, "PreToolUse", session_id=session, tool_name="Write", tool_input=data)
    ran = world.gate("pre-tool-use", event)
    assert ran.exit_code == 0, ran.stderr
    return str(ran.json()["hookSpecificOutput"]["permissionDecision"]) if ran.stdout else "allow"


def test_a_branch_protects_the_workflow_folders_of_the_server_that_started_its_run(tmp_path: Path) -> None:
    world = GateWorld(tmp_path)
    try:
        (world.workflows / "fan-out.json").write_text(json.dumps(FLOW))
        snap = world.snapshot()
        folders = [str(world.workflows)]
        parent = world.runs.start(
            LOCAL, snap.get("fan-out"), "Fan out", str(world.workspace), {}, workflow_folders=folders
        )
        target = world.workflows / "fan-out.json"
        assert _write(world, "lead", target) == "deny"  # the parent protects them
        waiting = world.runs.continue_(LOCAL, snap, parent["runId"], "collect", "Two.", {"items": ["a", "b"]})
        branches = [b["runId"] for b in waiting["branches"]]
        for branch in branches:
            started = next(e for e in world.runs.store.events(branch) if e.type == "started")
            assert started.data["workflowFolders"] == folders
        assert _write(world, "agent-2", target) == "deny"  # a second agent, bound to a branch
    finally:
        world.close()
