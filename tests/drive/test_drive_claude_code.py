"""`handrail drive` with the pinned Claude Code as its agent and the scripted model
playing it: whole runs, retries with the issues, a run that never passes, a budget
crossed, a person's approval waited for, and the driver killed mid-step."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.drive.scripted_agent import Agent, submit, tool
from tests.drive.world import DriveWorld
from tests.gate.real_harness.anthropic_model import ScriptedModel
from tests.gate.real_harness.claude_code_world import require_claude
from tests.gate.real_harness.coding_task_agent import DISCOUNTED, IMPLEMENTED, PARTS, UNDERSTAND, VERIFIED

pytestmark = pytest.mark.slow


@pytest.fixture
def world(tmp_path: Path) -> Iterator[DriveWorld]:
    require_claude()
    model = ScriptedModel()
    try:
        yield DriveWorld(tmp_path, model)
    finally:
        model.close()


def run_id_of(stderr: str) -> str:
    found = re.search(r"started run (run_\w+)", stderr)
    assert found, stderr
    return found.group(1)


def test_a_whole_coding_task_is_driven_through_retries_and_a_persons_approval_to_completion(
    world: DriveWorld,
) -> None:
    cart = str(world.repo / "src" / "cart.py")
    # a change to a public API: the plan waits for a person's approval
    public = {"taskSize": "medium", "touchesPublicApi": True, "openQuestions": 0}
    agent = Agent(
        {
            # twice too short for the step's rules, then as it asks
            "understand": [submit("understand", lambda n: UNDERSTAND if n > 2 else "short", public)],
            "plan": [submit("plan", json.dumps({"parts": PARTS}), {"planParts": PARTS})],
            "implement-part": [
                tool("Write", file_path=cart, content=DISCOUNTED),
                submit("implement-part", IMPLEMENTED),
            ],
            "verify": [submit("verify", VERIFIED)],
        }
    )
    agent.play_on(world.model)
    report = world.root / "report.md"
    first = world.drive("coding-task", "--goal", "Give the cart's total a discount", "--no-wait")

    # the plan waits for a person: --no-wait exits 3 and says where
    assert first.returncode == 3, first.stderr
    run_id = run_id_of(first.stderr)
    assert f"handrail runs approve {run_id}" in first.stderr
    understood = [p for p in agent.prompts if 'stepId "understand"' in p]
    assert len(understood) == 3
    assert "not accepted" not in understood[0] and "at least 300 characters" in understood[2]
    assert world.events(run_id, "rejected")[0]["stepId"] == "understand"

    world.approve(run_id)
    second = world.drive("--resume", run_id, "--report", str(report), "--json")

    assert second.returncode == 0, second.stderr
    outcome = json.loads(second.stdout)
    assert outcome["status"] == "completed" and outcome["runId"] == run_id
    assert (world.repo / "src" / "cart.py").read_text() == DISCOUNTED
    record = world.record(run_id)
    accepted = [e["stepId"] for e in record["events"] if e["type"] == "accepted"]
    assert accepted == ["understand", "plan", "implement-part", "verify"]
    checks = [e for e in record["events"] if e["type"] == "check"]
    assert [(e["check"], e["passed"]) for e in checks] == [("command", True), ("git", True)]
    usage = world.events(run_id, "usage")
    assert [e["stepId"] for e in usage] == ["understand"] * 3 + ["plan", "implement-part", "verify"]
    assert all(e["costUsd"] > 0 and e["outputTokens"] > 0 and e["agent"] == "claude-code" for e in usage)
    assert len(agent.prompts) == 6
    # the gate held each session (its hooks given by --settings) and let it stop once its step was accepted
    stops = [e["decision"] for e in world.events(run_id, "gate") if e["event"] == "stop"]
    refused = ["block", "block", "block", "allow:limit"]  # not accepted: held to its step, to the limit
    # understand (twice refused), understand, plan (waiting on a person), implement-part; verify ended the run
    assert stops == [*refused, *refused, "allow:driven-step-accepted", "allow", "allow:driven-step-accepted"]
    assert not (world.repo / ".claude").exists() and not (world.home / ".claude" / "settings.json").exists()
    assert "completed" in report.read_text()
