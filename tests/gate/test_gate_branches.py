"""The gate over the branches of a parallel loop: a branch protects the workflow
folders of the server that started its run, as the run itself does."""

from __future__ import annotations

import json
from pathlib import Path

from handrail.model.request import LOCAL
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


def test_a_driven_branch_agent_is_held_by_its_branchs_steps_not_by_the_step_count_of_the_run_it_drives(
    tmp_path: Path,
) -> None:
    flow = json.loads(json.dumps(FLOW))
    flow["steps"][1]["body"] = [
        {"id": step, "title": step, "prompt": f"Do {step}."} for step in ("one", "two", "three")
    ]
    world = GateWorld(tmp_path)
    try:
        (world.workflows / "fan-out.json").write_text(json.dumps(flow))
        snap = world.snapshot()
        parent = world.runs.start(LOCAL, snap.get("fan-out"), "Fan out", str(world.workspace), {})["runId"]
        waiting = world.runs.continue_(LOCAL, snap, parent, "collect", "Two.", {"items": ["a", "b"]})
        branch = waiting["branches"][0]["runId"]
        for step in ("one", "two"):  # two of the branch's steps: more than the parent's one
            world.runs.continue_(LOCAL, snap, branch, step, f"{step} done", {})
        take = claude_input(
            world,
            "PreToolUse",
            session_id="agent-1",
            tool_name="mcp__handrail__workflow_resume",
            tool_input={"runId": branch},
        )
        world.gate("pre-tool-use", take, "--driven-from", "1", "--driven-run", parent)
        note = world.workspace / "notes" / "a.md"

        def write(*driven: str) -> str:
            data = {"file_path": str(note), "content": "x"}
            event = claude_input(
                world, "PreToolUse", session_id="agent-1", tool_name="Write", tool_input=data
            )
            ran = world.gate("pre-tool-use", event, *driven)
            return str(ran.json()["hookSpecificOutput"]["permissionDecision"]) if ran.stdout else "allow"

        assert write("--driven-from", "1", "--driven-run", parent) == "allow"  # at the branch's `three`
        assert write("--driven-from", "1", "--driven-run", branch) == "deny"  # the branch's own count
        assert write("--driven-from", "1") == "deny"  # no run named: counted on the branch, as before
        world.run_id = branch  # the refusals are the branch's: the run the session works
        refused = [e for e in world.gate_events() if e["decision"] == "deny:driven-step-accepted"]
        assert len(refused) == 2
    finally:
        world.close()
