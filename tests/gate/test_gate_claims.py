"""The gate applies a claimed branch's step policy in the branch's workspace: the
branch works in its parent's folder, and a claim is the latest write there, so the
harness session that has not bound another run meets the branch's step."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.runs.request import LOCAL, Request
from tests.gate.runs import GateWorld, claude_input
from tests.helpers.branches import write_branches


@pytest.fixture
def world(tmp_path: Path) -> Iterator[GateWorld]:
    found = GateWorld(tmp_path)
    yield found
    found.close()


def write_file(world: GateWorld, session: str) -> str:
    edit = {"file_path": str(world.workspace / "src" / "cart.py"), "content": "x"}
    ran = world.gate(
        "pre-tool-use",
        claude_input(world, "PreToolUse", session_id=session, tool_name="Write", tool_input=edit),
    )
    assert ran.exit_code == 0, ran.stderr
    decision: str = ran.json()["hookSpecificOutput"]["permissionDecision"] if ran.stdout else "allow"
    return decision


def test_a_claimed_branchs_step_policy_denies_in_the_branchs_workspace(world: GateWorld) -> None:
    parent_id = world.start("implement")  # the parent's step lets src/ be written
    store = world.runs.store
    parent = store.get(parent_id)
    assert parent is not None
    workflow = world.runs.pinned(world.snapshot(), parent)
    write_branches(store, parent, workflow, ["cart", "checkout"])  # each at `plan`: docs/plan.md only
    world.runs.continue_(LOCAL, world.snapshot(), parent_id, None, None, {"note": "fanned out"})
    assert write_file(world, "lead") == "allow"  # the parent's step, in the parent's session

    claimed = world.runs.claims.claim(Request(session="stdio:agent-1"), parent_id, None, None)
    assert claimed["claimed"] is True and claimed["step"]["id"] == "plan"
    assert write_file(world, "agent-1") == "deny"  # the claimed branch's step: plan
    [denied] = [e for e in store.events(claimed["runId"]) if e.type == "gate"]
    assert denied.data["decision"] == "deny" and denied.step_id == "plan"
    assert write_file(world, "lead") == "allow"  # the parent's session still has the parent's step
