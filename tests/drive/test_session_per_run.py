"""`handrail drive --session per-run` with the pinned Claude Code and the scripted model:
each step's process goes on with the run's one session (`claude --resume`), so the
review step's agent has the write step's conversation before it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.drive.scripted_agent import TOOLS
from tests.drive.world import DriveWorld
from tests.gate.real_harness.anthropic_model import Request, ScriptedModel, Turn, say, use
from tests.gate.real_harness.claude_code_world import require_claude

pytestmark = pytest.mark.slow
TWO_STEPS = Path(__file__).with_name("two-steps.json")
PROMPT = re.compile(r'handrail drives you through one step.*?runId "(run_\w+)", stepId "([\w-]+)"', re.DOTALL)
OUTPUTS = {"write": "The note is written.", "review": "The note is reviewed."}


def texts(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content or () if isinstance(b, dict))


@pytest.fixture
def world(tmp_path: Path) -> Iterator[DriveWorld]:
    require_claude()
    model = ScriptedModel()
    try:
        yield DriveWorld(tmp_path, model)
    finally:
        model.close()


def test_each_step_goes_on_with_the_runs_one_claude_code_session(world: DriveWorld) -> None:
    world.add_workflow(json.loads(TWO_STEPS.read_text()))
    seen: list[list[str]] = []  # per step's first request: the steps its conversation names, in order

    def answer(request: Request) -> Turn:
        messages = request.messages
        prompts = [(i, PROMPT.search(texts(m))) for i, m in enumerate(messages) if m.get("role") == "user"]
        found = [(i, m) for i, m in prompts if m is not None]
        if not found:
            return say("No step was named.")
        at, last = found[-1]
        if "Stop hook" in request.last_user_text():
            return say("Stopping.")
        if not any(m.get("role") == "assistant" for m in messages[at:]):
            seen.append([m.group(2) for _, m in found])
            run_id, step = last.groups()
            return use(TOOLS + "workflow_continue", runId=run_id, stepId=step, output=OUTPUTS[step])
        return say(f"Step {last.group(2)} is submitted.")

    world.model.play(*([answer] * 40))
    done = world.drive("two-steps", "--session", "per-run", "--json")

    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["status"] == "completed"
    # the review's process was given the write's conversation, then its own prompt
    assert seen == [["write"], ["write", "review"]]
    sessions = [e["session"] for e in world.events(outcome["runId"], "usage")]
    assert len(sessions) == 2 and sessions[0] == sessions[1]
