"""`handrail drive --agent gemini` with Gemini CLI itself (`gemini -p`) and the scripted
Gemini API playing the agent: a whole run, one step tried again with its issues, the
MCP server and the gate's hooks given in a Gemini CLI home of the attempt's own,
the person's settings left as they were."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.drive.harness_worlds import NAMED, DriveAgentWorld, gemini_first_text, gemini_turns
from tests.gate.real_harness.agent_world import HANDRAIL, require
from tests.gate.real_harness.gemini_fixtures import GEMINI, GeminiWorld
from tests.gate.real_harness.gemini_model import GeminiModel, call, say
from tests.gate.real_harness.scripted_sse import Request

pytestmark = pytest.mark.slow


class GeminiDriveWorld(DriveAgentWorld):
    def __init__(self, root: Path, model: GeminiModel) -> None:
        super().__init__(root, model, "gemini", GEMINI)
        # the person's Gemini CLI home (auth, model, a trusted folder), without handrail in it
        self.gemini = GeminiWorld(root / "person", model, server=False)
        trusted = {str(self.workspace): "TRUST_FOLDER"}  # as the person's answer to Gemini CLI records it
        (self.gemini.gemini_home / "trustedFolders.json").write_text(json.dumps(trusted), encoding="utf-8")
        self.settings = (self.gemini.gemini_home / "settings.json").read_text()

    def harness_env(self) -> dict[str, str]:
        env = self.env()
        env.update(HOME=str(self.gemini.home), GEMINI_API_KEY="dummy", GOOGLE_GEMINI_BASE_URL=self.model.url)
        return env


@pytest.fixture
def world(tmp_path: Path) -> Iterator[GeminiDriveWorld]:
    require(GEMINI)
    model = GeminiModel()
    try:
        yield GeminiDriveWorld(tmp_path, model)
    finally:
        model.close()


def test_a_run_is_driven_to_completion_by_gemini_processes_one_a_step(world: GeminiDriveWorld) -> None:
    def play(run_id: str, step: str, taken: int) -> Any:
        if taken == 0:
            output = "The note is reviewed." if step == "review" else "The note is written."
            arguments = {"runId": run_id, "stepId": step, "output": output}
            return call("mcp_handrail_workflow_continue", arguments)
        return say(f"Step {step} is submitted.")

    world.play(gemini_first_text, gemini_turns, play)
    done = world.drive("two-steps", "--json")

    assert done.exit_code == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout)
    run_id = outcome["runId"]
    assert outcome["status"] == "completed"
    assert [(s["stepId"], s["attempts"]) for s in outcome["steps"]] == [("write", 1), ("review", 1)]
    assert [e["stepId"] for e in world.events(run_id, "accepted")] == ["write", "review"]
    usage = world.events(run_id, "usage")
    assert [e["stepId"] for e in usage] == ["write", "review"]
    # the scripted model's usage, as the stats of Gemini CLI's JSON result report it
    assert all(e["agent"] == "gemini" and e["reported"] for e in usage)
    assert all(e["inputTokens"] >= 100 and e["outputTokens"] >= 10 and e["costUsd"] == 0 for e in usage)
    # the gate's hooks, given in the attempt's own Gemini CLI home, held each session
    gate = world.events(run_id, "gate")
    assert [e["event"] for e in gate].count("session") == 2
    # the write's session was let go once its step was accepted; the review's ended the run
    assert [e["decision"] for e in gate if e["event"] == "stop"] == ["allow:driven-step-accepted"]
    # the person's settings are read, never written, and no project settings appear
    assert (world.gemini.gemini_home / "settings.json").read_text() == world.settings
    assert not (world.workspace / ".gemini").exists()
    assert str(HANDRAIL) not in world.settings


def test_with_a_session_per_run_each_step_goes_on_with_the_runs_one_gemini_session(
    world: GeminiDriveWorld,
) -> None:
    # per process's first request: what the model said before the driver's prompt
    seen: list[list[str]] = []

    def answer(request: Request) -> Any:
        contents = request.body.get("contents", [])
        texts = [" ".join(str(p.get("text", "")) for p in c.get("parts", [])) for c in contents]
        found = [
            (at, NAMED.search(text)) for at, text in enumerate(texts) if contents[at].get("role") == "user"
        ]
        at, last = next((at, match) for at, match in reversed(found) if match is not None)
        run_id, step = last.groups()
        if not any(c.get("role") == "model" for c in contents[at:]):
            seen.append(
                [t for c, t in zip(contents[:at], texts[:at], strict=True) if c.get("role") == "model" and t]
            )
            output = "The note is reviewed." if step == "review" else "The note is written."
            return call("mcp_handrail_workflow_continue", {"runId": run_id, "stepId": step, "output": output})
        return say(f"Step {step} is submitted.")

    world.model.script(*[answer] * 40)
    done = world.drive("two-steps", "--session", "per-run", "--json")

    assert done.exit_code == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout)
    assert outcome["status"] == "completed"
    assert seen == [[], ["Step write is submitted."]]  # the review's process had the write's conversation
    sessions = [e["session"] for e in world.events(outcome["runId"], "usage")]
    assert len(sessions) == 2 and sessions[0] == sessions[1]
    # kept where Gemini CLI keeps its sessions, the person's own home; the settings untouched
    assert (world.gemini.gemini_home / "tmp").is_dir()
    assert (world.gemini.gemini_home / "settings.json").read_text() == world.settings
