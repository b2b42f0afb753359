"""Gemini CLI 0.61 itself (`gemini -p`), driven by a scripted Gemini API on
127.0.0.1, in a git repository with the gate installed as docs/gate.md says and
handrail as its MCP server. Each session plays an agent; the assertions are on what
Gemini CLI did (the files, the commits, what it sent the model) and on the run's
record."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.gate.real_harness.agent_world import HANDRAIL, ROOT, gate_events, require
from tests.gate.real_harness.gemini_fixtures import GEMINI, GeminiWorld, gemini_world
from tests.gate.real_harness.gemini_model import SUMMARY, Filling, GeminiModel, call, say, texts
from tests.gate.real_harness.scripted_sse import Request

__all__ = ["gemini_world"]  # the fixture
pytestmark = pytest.mark.slow
GOAL = "Add a discount to the cart"
EXTENSION = ROOT / "integrations" / "gemini-extension"
HEADLESS = ("--yolo", "-p")  # every tool call approved by Gemini CLI: only the gate refuses


def is_compression(request: Request) -> bool:
    """Gemini CLI's request for a summary of the conversation it compresses."""
    return "Generate a new <state_snapshot>" in texts(request)


def continue_(run_id: str, step: str, output: str) -> dict[str, Any]:
    return call("mcp_handrail_workflow_continue", {"runId": run_id, "stepId": step, "output": output})


def test_a_gemini_session_is_held_to_the_run_and_let_go_when_it_is_done(gemini_world: GeminiWorld) -> None:
    world, model = gemini_world, gemini_world.model
    settings = json.loads((world.workspace / ".gemini" / "settings.json").read_text())
    assert {h["command"].split()[0] for g in settings["hooks"].values() for e in g for h in e["hooks"]} == {
        str(HANDRAIL)
    }

    # session 1: the agent starts a run through Gemini CLI's MCP client, then edits and
    # commits during planning, and tries to stop
    run: dict[str, str] = {}

    def continue_plan(request: Any) -> dict[str, Any]:
        found = re.search(r"run_[0-9a-f]{32}", texts(request))
        assert found
        run["id"] = found.group(0)
        return continue_(run["id"], "plan", "The plan is in docs/plan.md.")

    start = {"workflowId": "gate-fixture", "goal": GOAL, "workspace": str(world.workspace)}
    model.script(
        lambda r: call("mcp_handrail_workflow_start", start),
        lambda r: call("write_file", {"file_path": str(world.cart), "content": "PRICE = 9\n"}),
        lambda r: call("run_shell_command", {"command": "git commit --allow-empty -m plan"}),
        lambda r: call("write_file", {"file_path": "docs/plan.md", "content": "# Plan\nTake 10% off.\n"}),
        continue_plan,
        lambda r: call("run_shell_command", {"command": "git commit --allow-empty -m implement"}),
        *[lambda r: say("I will stop here.")] * 4,
    )
    world.gemini(*HEADLESS, f"{GOAL}, with the gate-fixture workflow.")
    run_id = run["id"]

    assert world.cart.read_text() == "PRICE = 10\n"
    assert (world.workspace / "docs" / "plan.md").read_text() == "# Plan\nTake 10% off.\n"
    assert world.commits() == ["first"]
    told = texts(model.agent_requests()[-1])  # the whole conversation
    assert "does not allow edit:src/cart.py" in told
    assert "does not allow shell:git commit --allow-empty -m plan" in told
    assert "commit after the tests step" in told
    # each refused stop came back to the model as a prompt with the reason
    reasons = re.findall(r"step '(\w+)' \(\d of 4\) and is not finished[^\n]*refused (\d) of 3", told)
    assert reasons == [("implement", "1"), ("implement", "2"), ("implement", "3")], reasons

    # session 2: resumed, Gemini CLI is told where the run stands; the agent works the
    # run to its last step, which waits for a person, who approves while the agent
    # waits; then edits, commits and the stop go through. The context fills up once:
    # Gemini CLI compresses it before its next request
    def approved_then_edit(request: Any) -> dict[str, Any]:
        assert world.record(run_id)["run"]["status"] == "awaiting_approval"
        world.approve(run_id)
        return call("write_file", {"file_path": str(world.cart), "content": "PRICE = 8\n"})

    model.script(
        lambda r: Filling(call("write_file", {"file_path": str(world.cart), "content": "PRICE = 9\n"})),
        lambda r: continue_(run_id, "implement", "PRICE is 9."),
        lambda r: call("run_shell_command", {"command": "git commit -am discount"}),
        lambda r: continue_(run_id, "test", "Tests pass; committed."),
        lambda r: continue_(run_id, "release", "Release: 10% off."),
        approved_then_edit,
        lambda r: call("run_shell_command", {"command": "git commit -am more"}),
        lambda r: say("Done."),
    )
    before = len(model.requests)
    world.gemini("--resume", "latest", *HEADLESS, "Go on with the run.")
    session = model.requests[before:]
    first = next(r for r in session if r.turn)
    assert f'Next call: workflow_continue with runId "{run_id}", stepId "implement"' in texts(first)
    assert world.cart.read_text() == "PRICE = 8\n"
    assert world.commits() == ["more", "discount", "first"]
    # Gemini CLI compressed once, and sent the summary in place of the history after
    compressions = [i for i, r in enumerate(session) if not r.turn and is_compression(r)]
    assert len(compressions) == 1, "Gemini CLI did not compress"
    assert SUMMARY in texts(session[compressions[0] + 1])

    record = world.record(run_id)
    assert record["run"]["status"] == "completed"
    decisions = [(e["event"], e.get("action"), e["decision"]) for e in gate_events(record)]
    assert ("before-tool", "edit:src/cart.py", "deny") in decisions
    assert ("before-tool", "shell:git commit --allow-empty -m plan", "deny") in decisions
    assert ("after-tool", "shell:git commit -am discount", "record") in decisions
    # Gemini CLI 0.61 runs PreCompress before each request, compressing or not: each is recorded
    assert ("compact", None, "record") in decisions
    stopped = [d[2] for d in decisions if d[0] == "stop"]
    assert stopped == ["block", "block", "block", "allow:limit"]  # a done run's stop is not recorded


def test_the_extension_linked_into_gemini_cli_brings_the_server_and_the_gate(tmp_path: Path) -> None:
    require(GEMINI)
    model = GeminiModel()
    try:
        world = GeminiWorld(tmp_path, model, server=False)
        linked = world.gemini("extensions", "link", str(EXTENSION), "--consent", on_path=True)
        assert "handrail" in linked.stdout + linked.stderr

        run: dict[str, str] = {}

        def abandon(request: Any) -> dict[str, Any]:
            found = re.search(r"run_[0-9a-f]{32}", texts(request))
            assert found
            run["id"] = found.group(0)
            return call("mcp_handrail_workflow_abandon", {"runId": run["id"], "reason": "done for today"})

        start = {"workflowId": "gate-fixture", "goal": GOAL, "workspace": str(world.workspace)}
        model.script(
            lambda r: call("mcp_handrail_workflow_start", start),
            lambda r: call("write_file", {"file_path": str(world.cart), "content": "PRICE = 9\n"}),
            lambda r: say("Stopping."),
            abandon,
            lambda r: say("The run is abandoned."),
        )
        world.gemini(*HEADLESS, f"{GOAL}, with the gate-fixture workflow.", on_path=True)
    finally:
        model.close()

    # the extension's server started the run, its hooks (no others: the gate was never
    # installed here) refused the edit and the first stop
    assert not (world.workspace / ".gemini").exists()
    assert world.cart.read_text() == "PRICE = 10\n"
    told = texts(model.agent_requests()[-1])
    assert "does not allow edit:src/cart.py" in told
    assert "stopping is refused 1 of 3 times" in told
    record = world.record(run["id"])
    assert record["run"]["status"] == "abandoned"
    decisions = [(e["event"], e.get("action"), e["decision"]) for e in gate_events(record)]
    assert ("before-tool", "edit:src/cart.py", "deny") in decisions
    assert [d[2] for d in decisions if d[0] == "stop"] == ["block"]
