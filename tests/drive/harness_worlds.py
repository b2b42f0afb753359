"""The worlds of `handrail drive --agent codex` and `--agent gemini` tests: the
harness's own home as a person has it (a model provider and a trusted folder, no
handrail in it), the scripted model, and the driver run as the README runs it (the
venv's `handrail`, by its full path), with the harness named by --agent-command.

The scripted agent is one policy for every request: the driver's prompt names the run
and the step, and the step's turns are played in order, counted by the model turns the
conversation already holds, so one script serves however many processes are started."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.drive.world import CHECK
from tests.gate.real_harness.agent_world import HANDRAIL, AgentWorld, Ran, run_harness
from tests.gate.real_harness.openai_codex_home import CODEX, MODEL, toml_string
from tests.gate.real_harness.scripted_sse import Request, ScriptedModel

TWO_STEPS = Path(__file__).with_name("two-steps.json")  # a note written, then reviewed
NAMED = re.compile(r'runId "(run_\w+)", stepId "([\w-]+)"')
Play = Callable[[str, str, int], Any]  # (run id, step, turns taken) -> the turn's value


class DriveAgentWorld(AgentWorld):
    def __init__(self, root: Path, model: ScriptedModel, agent: str, program: Path) -> None:
        super().__init__(root)
        self.model, self.agent, self.program = model, agent, program
        shutil.copy(TWO_STEPS, self.workflows / TWO_STEPS.name)
        self.prompts: list[str] = []

    def harness_env(self) -> dict[str, str]:
        return self.env()

    def drive(self, *args: str) -> Ran:
        argv = [str(HANDRAIL), "drive", *args, "--agent", self.agent, "--agent-command", str(self.program)]
        argv += ["--workspace", str(self.workspace), "--database", self.url, "--no-bundled"]
        argv += ["--workflows", str(self.workflows), "--allow-commands", "--command", CHECK]
        ran = run_harness(argv, self.harness_env(), self.workspace)
        assert not self.model.errors, (self.model.errors, ran.stderr[-3000:])
        return ran

    def play(self, first_text: Callable[[Request], str], turns: Callable[[Request], int], play: Play) -> None:
        """Every agent turn answered by `play`, for the step the driver's prompt names."""

        def answer(request: Request) -> Any:
            found = NAMED.search(first_text(request))
            assert found, "no step was named"
            taken = turns(request)
            if taken == 0:
                self.prompts.append(first_text(request))
            return play(found.group(1), found.group(2), taken)

        self.model.script(*[answer] * 200)

    def events(self, run_id: str, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.record(run_id)["events"] if e["type"] == kind]


class CodexDriveWorld(DriveAgentWorld):
    def __init__(self, root: Path, model: ScriptedModel) -> None:
        super().__init__(root, model, "codex", CODEX)
        self.codex_home = root / "codex-home"
        self.codex_home.mkdir()
        # the person's own Codex configuration: a provider and a trusted project, no MCP server
        self.config = f"""model = "{MODEL}"
model_provider = "scripted"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted"
base_url = {toml_string(model.url + "/v1")}
env_key = "OPENAI_API_KEY"
wire_api = "responses"
stream_idle_timeout_ms = 600000

[projects.{toml_string(str(self.workspace))}]
trust_level = "trusted"
"""
        (self.codex_home / "config.toml").write_text(self.config, encoding="utf-8")

    def harness_env(self) -> dict[str, str]:
        return {**self.env(), "CODEX_HOME": str(self.codex_home), "OPENAI_API_KEY": "dummy"}


def codex_first_text(request: Request) -> str:
    for item in request.body.get("input", []):
        if isinstance(item, dict) and item.get("role") == "user":
            for part in item.get("content") or []:
                text = part.get("text", "") if isinstance(part, dict) else ""
                if NAMED.search(text):
                    return str(text)
    return ""


def codex_turns(request: Request) -> int:
    kinds = ("function_call", "custom_tool_call", "tool_search_call")
    return sum(
        1
        for item in request.body.get("input", [])
        if isinstance(item, dict) and (item.get("type") in kinds or item.get("role") == "assistant")
    )


def gemini_first_text(request: Request) -> str:
    for content in request.body.get("contents", []):
        for part in content.get("parts", []):
            if content.get("role") == "user" and NAMED.search(str(part.get("text", ""))):
                return str(part["text"])
    return ""


def gemini_turns(request: Request) -> int:
    return sum(1 for content in request.body.get("contents", []) if content.get("role") == "model")
