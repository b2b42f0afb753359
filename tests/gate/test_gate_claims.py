"""The gate applies a claimed branch's step policy in the branch's workspace: the
branch works in its parent's folder, and a claim is the latest write there, so the
harness session that has not bound another run meets the branch's step; the session
bound to the waiting parent meets the step of a branch nobody else took."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.model.request import LOCAL, Request
from tests.gate.runs import GateWorld, claude_input
from tests.gate.test_gate_tree import FLOW


@pytest.fixture
def world(tmp_path: Path) -> Iterator[GateWorld]:
    found = GateWorld(tmp_path)
    (found.workflows / "fan-out.json").write_text(json.dumps(FLOW))
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
    snap = world.snapshot()
    parent_id = world.runs.start(LOCAL, snap.get("fan-out"), "Fan out", str(world.workspace), {})["runId"]
    assert write_file(world, "lead") == "allow"  # the parent's step (collect: no rules) binds lead
    waiting = world.runs.continue_(
        LOCAL, snap, parent_id, "collect", "Two items.", {"items": ["cart", "checkout"]}
    )
    branches = {branch["runId"] for branch in waiting["branches"]}  # each at `plan`: docs/plan.md only
    store = world.runs.store

    claimed = world.runs.claims.claim(Request(session="stdio:agent-1"), parent_id, None, None)
    assert claimed["claimed"] is True and claimed["step"]["id"] == "plan"
    assert write_file(world, "agent-1") == "deny"  # the claimed branch's step: plan
    [denied] = [e for e in store.events(claimed["runId"]) if e.type == "gate"]
    assert denied.data["decision"] == "deny" and denied.step_id == "plan"
    assert denied.data["session"] == "agent-1"
    # the parent waits on its loop: its session works the branch agent-1 did not take
    assert write_file(world, "lead") == "deny"
    [other] = branches - {claimed["runId"]}
    [lead_denied] = [e for e in store.events(other) if e.type == "gate"]
    assert lead_denied.data["session"] == "lead" and lead_denied.step_id == "plan"


@pytest.mark.parametrize("shape", ["content", "structured"])
def test_the_branch_a_claims_answer_names_is_bound_to_the_session_that_claimed_it(
    world: GateWorld, shape: str
) -> None:
    snap = world.snapshot()
    parent_id = world.runs.start(LOCAL, snap.get("fan-out"), "Fan out", str(world.workspace), {})["runId"]
    world.runs.continue_(LOCAL, snap, parent_id, "collect", "Two items.", {"items": ["cart", "checkout"]})
    first = world.runs.claims.claim(Request(session="stdio:agent-1"), parent_id, None, None)
    second = world.runs.claims.claim(Request(session="stdio:agent-2"), parent_id, None, None)
    # agent-1's harness is told of its claim after agent-2's: the latest write is agent-2's branch
    answer = json.dumps(first)
    response = (
        [{"type": "text", "text": answer}]
        if shape == "content"
        else {"structuredContent": first, "content": []}
    )
    told = claude_input(
        world,
        "PostToolUse",
        session_id="agent-1",
        tool_name="mcp__handrail__workflow_claim",
        tool_input={"runId": parent_id},
        tool_response=response,
    )
    assert world.gate("post-tool-use", told).exit_code == 0
    assert write_file(world, "agent-1") == "deny"  # the claimed branch's step: plan
    store = world.runs.store
    mine = [e for e in store.events(first["runId"]) if e.type == "gate"]
    assert [e.data.get("bind") for e in mine if e.data["event"] == "after-tool"] == [True]
    assert any(e.data["decision"] == "deny" and e.data["session"] == "agent-1" for e in mine)
    assert not [e for e in store.events(second["runId"]) if e.type == "gate"]  # not agent-2's branch
