"""A scripted agent for driven sessions: one policy answers every request Claude Code
sends the scripted model (tests/gate/real_harness/anthropic_model.py), by what the
conversation holds, so the same script serves however many processes the driver
starts. The driver's prompt names the run and the step; the policy plays the step's
turns in order (tool calls, then workflow_continue), then stops, and answers a Stop
hook's refusal by stopping again."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.gate.real_harness.anthropic_model import Request, ScriptedModel, Turn, say, use

TOOLS = "mcp__handrail__"
Act = Callable[[str, int], Turn]  # (run id, attempt at this step: 1, 2, ...) -> the turn


def submit(step: str, output: str | Callable[[int], str], context: dict[str, Any] | None = None) -> Act:
    """workflow_continue for `step`; `output` may depend on the attempt."""

    def act(run_id: str, attempt: int) -> Turn:
        text = output(attempt) if callable(output) else output
        given: dict[str, Any] = {"runId": run_id, "stepId": step, "output": text}
        if context is not None:
            given["context"] = context
        return use(TOOLS + "workflow_continue", **given)

    return act


def tool(name: str, **given: Any) -> Act:
    return lambda run_id, attempt: use(name, **given)


@dataclass
class Agent:
    """The turns of each step, and what it saw: the prompts the driver gave, in order."""

    steps: dict[str, list[Act]]
    prompts: list[str] = field(default_factory=list)
    hold: threading.Event | None = None  # set: the first turn waits for it (a test kills the driver)
    holding: threading.Event = field(default_factory=threading.Event)

    def play_on(self, model: ScriptedModel, turns: int = 400) -> None:
        model.play(*([self.answer] * turns))

    def answer(self, request: Request) -> Turn:
        first = first_user_text(request)
        found = re.search(r'runId "(run_\w+)", stepId "([\w-]+)"', first)
        if found is None:
            return say("No step was named.")
        run_id, step = found.groups()
        turns_taken = sum(1 for m in request.messages if m.get("role") == "assistant")
        if turns_taken == 0:
            self.prompts.append(first)
            if self.hold is not None:
                self.holding.set()
                self.hold.wait(60)
        if "Stop hook" in request.last_user_text():
            return say("Stopping.")
        attempt = sum(1 for p in self.prompts if f'stepId "{step}"' in p)
        acts = self.steps.get(step, [])
        if turns_taken < len(acts):
            return acts[turns_taken](run_id, attempt)
        return say(f"Step {step} is submitted.")


def first_user_text(request: Request) -> str:
    for message in request.messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [
            str(b.get("text", "")) for b in content or () if isinstance(b, dict) and b.get("type") == "text"
        ]
        joined = "\n".join(texts)
        if "runId" in joined:
            return joined
    return ""
