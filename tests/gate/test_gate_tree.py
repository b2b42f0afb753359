"""The gate follows a harness session into the run tree: while the run it is bound to
waits on its branches or child (a waiting run has no step of its own), the step rules
that hold are those of the branch or child the session works, and with none to be
found, edits and commands are refused rather than left to the workflow-wide rules."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handrail.model.request import LOCAL
from tests.gate.runs import GateWorld, claude_input

FLOW: dict[str, Any] = {
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
            "body": [
                {
                    "id": "plan",
                    "title": "Plan {{item}}",
                    "prompt": "Write docs/plan.md only.",
                    "allow": ["read", "edit:docs/plan.md"],
                }
            ],
        },
        {"id": "report", "title": "Report", "prompt": "Report."},
    ],
}


@pytest.fixture
def world(tmp_path: Path) -> Iterator[GateWorld]:
    found = GateWorld(tmp_path)
    (found.workflows / "fan-out.json").write_text(json.dumps(FLOW))
    yield found
    found.close()


def gate(world: GateWorld, session: str, tool: str, data: dict[str, Any]) -> tuple[str, str]:
    """The decision and its reason for one tool call of `session`."""
    ran = world.gate(
        "pre-tool-use",
        claude_input(world, "PreToolUse", session_id=session, tool_name=tool, tool_input=data),
    )
    assert ran.exit_code == 0, ran.stderr
    if not ran.stdout:
        return "allow", ""
    output = ran.json()["hookSpecificOutput"]
    return output["permissionDecision"], output.get("permissionDecisionReason", "")


def write(world: GateWorld, session: str, path: str) -> tuple[str, str]:
    return gate(world, session, "Write", {"file_path": str(world.workspace / path), "content": "x"})


def fanned_out(world: GateWorld) -> tuple[str, list[str]]:
    """A run bound to the session `lead`, waiting on its two branches."""
    snap = world.snapshot()
    parent = world.runs.start(LOCAL, snap.get("fan-out"), "Fan out", str(world.workspace), {})["runId"]
    assert write(world, "lead", "src/cart.py")[0] == "allow"  # binds the parent (collect: no rules)
    waiting = world.runs.continue_(LOCAL, snap, parent, "collect", "Two items.", {"items": ["a", "b"]})
    return parent, [branch["runId"] for branch in waiting["branches"]]


def test_the_session_bound_to_a_waiting_parent_meets_the_step_rules_of_the_branch_it_works(
    world: GateWorld,
) -> None:
    parent, branches = fanned_out(world)
    verdict, reason = write(world, "lead", "src/cart.py")
    assert verdict == "deny", "the branch step `plan` allows only docs/plan.md"
    [taken] = [branch for branch in branches if f"step 'plan' (2 of 3, run {branch})" in reason]
    assert write(world, "lead", "docs/plan.md")[0] == "allow"
    binds = [e for e in world.runs.store.events(taken) if e.type == "gate" and e.data.get("bind")]
    assert [e.data["session"] for e in binds] == ["lead"]  # the branch is now the session's
    assert write(world, "lead", "src/cart.py")[1] == reason  # and stays so
    assert all(e.data["decision"] == "bind" for e in world.runs.store.events(parent) if e.type == "gate")


def test_a_run_tool_call_naming_a_branch_takes_the_session_to_that_branch(world: GateWorld) -> None:
    _parent, branches = fanned_out(world)
    named, newer = branches  # the second was written last
    resume = {"runId": named}
    assert gate(world, "lead", "mcp__handrail__workflow_resume", resume)[0] == "allow"
    binds = [e for e in world.runs.store.events(named) if e.type == "gate" and e.data.get("bind")]
    assert [e.data["session"] for e in binds] == ["lead"]
    verdict, reason = write(world, "lead", "src/cart.py")
    assert verdict == "deny" and f"run {named})" in reason
    assert not [e for e in world.runs.store.events(newer) if e.type == "gate"]


def test_a_waiting_parent_with_no_open_branch_refuses_edits_and_commands_and_says_why(
    world: GateWorld,
) -> None:
    parent, branches = fanned_out(world)
    world.runs.abandon(LOCAL, branches[0], "not needed")  # the loop fails: its branches end
    assert all(world.runs.store.get(branch).status == "abandoned" for branch in branches)  # type: ignore[union-attr]
    current = world.runs.store.get(parent)
    assert current is not None and "waitingOn" in current.position, current.position
    verdict, reason = write(world, "lead", "src/cart.py")
    assert verdict == "deny"
    assert f"run {parent} waits on its branches at step 'each'" in reason
    assert "workflow_claim" in reason
    assert gate(world, "lead", "Bash", {"command": "touch src/cart.py"})[0] == "deny"
    assert gate(world, "lead", "Read", {"file_path": str(world.workspace / "README.md")})[0] == "allow"


def test_a_branch_protects_the_workflow_folders_its_parent_was_started_with(world: GateWorld) -> None:
    flow = json.loads(json.dumps(FLOW))
    flow["steps"][1]["body"][0].pop("allow")  # the branch step alone would allow the write
    (world.workflows / "fan-out.json").write_text(json.dumps(flow))
    snap = world.snapshot()
    parent = world.runs.start(
        LOCAL,
        snap.get("fan-out"),
        "Fan out",
        str(world.workspace),
        {},
        workflow_folders=[str(world.workflows)],
    )["runId"]
    target = world.workflows / "fan-out.json"
    edit = {"file_path": str(target), "content": "{}"}
    assert gate(world, "lead", "Write", edit)[0] == "deny"  # the parent protects its server's workflows
    world.runs.continue_(LOCAL, snap, parent, "collect", "Two items.", {"items": ["a", "b"]})
    verdict, reason = gate(world, "agent-2", "Write", edit)  # a second agent meets an unbound branch
    assert verdict == "deny", reason
    assert reason.startswith(f"handrail: {target} holds the runs and their workflows"), reason
    assert parent not in reason  # the branch's own decision
