"""Workflow folders a server was given only on its command line (`--workflows`), which
the hook cannot see: the run records them when it starts, and the gate protects them
while it is active. Tried through a real `handrail start` and `handrail gate`
processes, the way an agent would try to get at them."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.gate.runs import GateWorld, claude_input
from tests.helpers.server import Server


def started_by_a_server(world: GateWorld, *options: str) -> Server:
    server = Server("--no-bundled", *options, "--database", world.url)
    server.initialize()
    world.run_id = server.call(
        "workflow_start",
        {"workflowId": "gate-fixture", "goal": "Add a discount", "workspace": str(world.workspace)},
    )["structuredContent"]["runId"]
    return server


def pre_tool(world: GateWorld, tool: str, **tool_input: str) -> str | None:
    """The gate's verdict on the tool call: its reason when denied, else None."""
    done = world.gate(
        "pre-tool-use", claude_input(world, "PreToolUse", tool_name=tool, tool_input=tool_input)
    )
    assert done.exit_code == 0, done.stderr
    if not done.stdout:
        return None
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    return str(answer["permissionDecisionReason"])


def test_a_folder_given_only_with_workflows_is_protected_from_edits_and_the_shell(world: GateWorld) -> None:
    fixture = world.workflows / "gate-fixture.json"
    server = started_by_a_server(world, "--workflows", str(world.workflows))
    try:
        # the plan step allows `shell:cat *` and edits of docs/plan.md: neither reaches the source
        reason = pre_tool(world, "Write", file_path=str(fixture), content="{}")
        assert reason is not None and "holds the runs and their workflows" in reason
        assert pre_tool(world, "Bash", command=f"cat {fixture} > /tmp/copy.json") is not None
        assert pre_tool(world, "Bash", command=f"cat {world.workflows}/*.json") is not None
        # a link in the workspace that leads into the folder, named as the plan file
        (world.workspace / "docs").mkdir()
        os.symlink(fixture, world.workspace / "docs" / "plan.md")
        reason = pre_tool(world, "Edit", file_path=str(world.workspace / "docs" / "plan.md"))
        assert reason is not None and str(fixture) in reason
        # what the step allows elsewhere still goes through
        assert pre_tool(world, "Bash", command="cat README.md") is None
    finally:
        server.close()
    denied = [e for e in world.gate_events() if e["decision"] == "deny"]
    assert len(denied) == 4


def test_a_folder_the_run_was_not_served_from_is_not_protected(world: GateWorld, tmp_path: Path) -> None:
    elsewhere = tmp_path / "notes"
    elsewhere.mkdir()
    server = started_by_a_server(world, "--workflows", str(world.workflows))
    try:
        assert pre_tool(world, "Bash", command=f"cat {elsewhere}/todo.txt") is None
    finally:
        server.close()


def test_the_sources_stop_being_protected_once_the_run_is_over(world: GateWorld) -> None:
    server = started_by_a_server(world, "--workflows", str(world.workflows))
    try:
        assert world.run_id is not None
        server.call("workflow_abandon", {"runId": world.run_id, "reason": "not needed"})
        assert (
            pre_tool(world, "Write", file_path=str(world.workflows / "gate-fixture.json"), content="{}")
            is None
        )
    finally:
        server.close()
