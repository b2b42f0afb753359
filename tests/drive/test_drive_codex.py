"""`handrail drive --agent codex` with Codex CLI itself (`codex exec`) and the scripted
Responses API playing the agent: a whole run, one step tried again with its issues,
the MCP server and the gate's hooks given by `-c` overrides, the hooks holding the
session to its step, and the person's CODEX_HOME left as it was."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.drive.harness_worlds import NAMED, CodexDriveWorld, codex_first_text, codex_turns
from tests.gate.real_harness.agent_world import require
from tests.gate.real_harness.openai_codex_home import CODEX
from tests.gate.real_harness.openai_model import ResponsesModel, call, say, search
from tests.gate.real_harness.scripted_sse import Request

pytestmark = pytest.mark.slow


@pytest.fixture
def world(tmp_path: Path) -> Iterator[CodexDriveWorld]:
    require(CODEX)
    model = ResponsesModel()
    try:
        yield CodexDriveWorld(tmp_path, model)
    finally:
        model.close()


def test_a_run_is_driven_to_completion_by_codex_processes_one_a_step(world: CodexDriveWorld) -> None:
    outputs = {"write": lambda attempt: "Nothing yet." if attempt == 1 else "The note is written."}

    def play(run_id: str, step: str, taken: int) -> Any:
        attempt = sum(1 for p in world.prompts if f'stepId "{step}"' in p)
        if taken == 0:  # Codex defers its MCP tools: the agent finds them first
            return search("handrail workflow_continue")
        if taken == 1:
            output = outputs.get(step, lambda a: "The note is reviewed.")(attempt)
            arguments = {"runId": run_id, "stepId": step, "output": output}
            return call("workflow_continue", arguments, "mcp__handrail")
        return say(f"Step {step} is submitted.")

    world.play(codex_first_text, codex_turns, play)
    done = world.drive("two-steps", "--json")

    assert done.exit_code == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout)
    run_id = outcome["runId"]
    assert outcome["status"] == "completed"
    assert [(s["stepId"], s["attempts"]) for s in outcome["steps"]] == [("write", 2), ("review", 1)]
    assert "Say that the note is written" in world.prompts[1]
    assert [e["stepId"] for e in world.events(run_id, "accepted")] == ["write", "review"]
    usage = world.events(run_id, "usage")
    assert [e["stepId"] for e in usage] == ["write", "write", "review"]
    # the scripted model's usage, as Codex's turn.completed events report it; no price
    assert all(e["agent"] == "codex" and e["reported"] for e in usage)
    assert all(e["inputTokens"] >= 100 and e["outputTokens"] >= 10 and e["costUsd"] == 0 for e in usage)
    assert all(re.fullmatch(r"[0-9a-f-]{36}", e["session"]) for e in usage)
    # the gate's hooks, given by -c overrides for the invocation alone, held each session
    gate = world.events(run_id, "gate")
    assert [e["event"] for e in gate].count("session") == 3, gate
    # the first write's stop refused once (not accepted), the second's let go once accepted;
    # the review's ended the run
    stops = [e["decision"] for e in gate if e["event"] == "stop"]
    assert stops == ["block", "allow:limit", "allow:driven-step-accepted"], stops
    # the person's configuration is read, never written
    assert (world.codex_home / "config.toml").read_text() == world.config
    assert not (world.workspace / ".codex").exists()


def test_codex_tokens_priced_with_price_count_toward_the_budget(world: CodexDriveWorld) -> None:
    def play(run_id: str, step: str, taken: int) -> Any:
        if taken == 0:
            return search("handrail workflow_continue")
        if taken == 1:
            arguments = {"runId": run_id, "stepId": step, "output": "The note is written."}
            return call("workflow_continue", arguments, "mcp__handrail")
        return say(f"Step {step} is submitted.")

    world.play(codex_first_text, codex_turns, play)
    done = world.drive("two-steps", "--price", "3,15,0.3", "--max-usd", "0.0001", "--json")

    assert done.exit_code == 1, done.stderr[-3000:]
    outcome = json.loads(done.stdout)
    assert outcome["reason"].startswith("the budget of $0.0001 is crossed"), outcome
    (used,) = world.events(outcome["runId"], "usage")  # the write step's one process, then no more
    counted = used["inputTokens"] * 3 + used["outputTokens"] * 15 + used["cacheReadTokens"] * 0.3
    assert used["priced"] is True and used["costUsd"] == pytest.approx(counted / 1_000_000)
    assert outcome["costUsd"] == pytest.approx(used["costUsd"], abs=1e-6) and used["costUsd"] > 0.0001


def test_a_codex_session_whose_step_is_accepted_is_refused_the_next_steps_edit(
    world: CodexDriveWorld,
) -> None:
    note = world.workspace / "review.md"

    def play(run_id: str, step: str, taken: int) -> Any:
        if taken == 0:
            return search("handrail workflow_continue")
        if taken == 1:
            output = "The note is written." if step == "write" else "The note is reviewed."
            return call(
                "workflow_continue", {"runId": run_id, "stepId": step, "output": output}, "mcp__handrail"
            )
        if taken == 2 and step == "write":  # on into the review, in the write's session
            return call("exec_command", {"cmd": f"echo reviewed > {note}"})
        return say(f"Step {step} is submitted.")

    world.play(codex_first_text, codex_turns, play)
    done = world.drive("two-steps", "--json")

    assert done.exit_code == 0, done.stderr[-3000:]
    run_id = json.loads(done.stdout)["runId"]
    assert not note.exists()  # refused before it ran
    gate = world.events(run_id, "gate")
    refused = [e for e in gate if e["decision"] == "deny:driven-step-accepted"]
    assert len(refused) == 1 and "review.md" in refused[0]["action"], gate


def test_with_a_session_per_run_each_step_goes_on_with_the_runs_one_codex_thread(
    world: CodexDriveWorld,
) -> None:
    seen: list[list[str]] = []  # per process's first request: the steps its conversation names

    def answer(request: Request) -> Any:
        items = request.body.get("input", [])
        named = [
            (at, NAMED.search(text_of(item))) for at, item in enumerate(items) if item.get("role") == "user"
        ]
        found = [(at, match) for at, match in named if match is not None]
        assert found, "no step was named"
        at, last = found[-1]
        taken = codex_turns(replace(request, body={**request.body, "input": items[at:]}))
        run_id, step = last.groups()
        if taken == 0:
            seen.append([match.group(2) for _, match in found])
            return search("handrail workflow_continue")
        if taken == 1:
            output = "The note is written." if step == "write" else "The note is reviewed."
            arguments = {"runId": run_id, "stepId": step, "output": output}
            return call("workflow_continue", arguments, "mcp__handrail")
        return say(f"Step {step} is submitted.")

    world.model.script(*[answer] * 40)
    done = world.drive("two-steps", "--session", "per-run", "--json")

    assert done.exit_code == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout)
    assert outcome["status"] == "completed"
    assert seen == [["write"], ["write", "review"]]  # the review's process had the write's conversation
    threads = [e["session"] for e in world.events(outcome["runId"], "usage")]
    assert len(threads) == 2 and threads[0] == threads[1]


def text_of(item: dict[str, Any]) -> str:
    return "\n".join(str(p.get("text", "")) for p in item.get("content") or () if isinstance(p, dict))
