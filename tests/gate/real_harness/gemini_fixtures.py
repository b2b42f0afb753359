"""A temporary home for Gemini CLI 0.61 sessions against the scripted Gemini API: the
user settings pick the Gemini API key auth (the base URL then comes from
GOOGLE_GEMINI_BASE_URL, the key is a dummy), the workspace is a trusted folder (as a
person's answer to Gemini CLI's trust question records it, in trustedFolders.json),
and handrail is the MCP server (unless an extension brings it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gate.real_harness.agent_world import (
    HANDRAIL,
    HARNESSES,
    VENV_BIN,
    AgentWorld,
    Ran,
    require,
    run_harness,
)
from tests.gate.real_harness.gemini_model import GeminiModel

GEMINI = HARNESSES / "gemini"
MODEL = "gemini-2.5-flash"  # named, so Gemini CLI does not route between models first


class GeminiWorld(AgentWorld):
    def __init__(self, root: Path, model: GeminiModel, *, server: bool = True) -> None:
        super().__init__(root)
        self.model = model
        self.gemini_home = self.home / ".gemini"
        self.gemini_home.mkdir()
        settings: dict[str, Any] = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "model": {"name": MODEL},
            "general": {"disableAutoUpdate": True},
            "privacy": {"usageStatisticsEnabled": False},
        }
        if server:  # without an extension: the gate installed and handrail named as docs/gate.md says
            self.installed = self.install_gate("gemini")
            env = {"HANDRAIL_HOME": str(self.handrail_home)}
            settings["mcpServers"] = {
                "handrail": {"command": str(HANDRAIL), "args": self.server_args(), "env": env}
            }
        (self.gemini_home / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
        trusted = {str(self.workspace): "TRUST_FOLDER"}
        (self.gemini_home / "trustedFolders.json").write_text(json.dumps(trusted), encoding="utf-8")

    def gemini_env(self, *, on_path: bool = False) -> dict[str, str]:
        env = self.env()
        env.update(GEMINI_API_KEY="dummy", GOOGLE_GEMINI_BASE_URL=self.model.url)
        if on_path:  # the extension calls `handrail` from PATH, as docs/gate.md says
            env["PATH"] = str(VENV_BIN) + ":" + env["PATH"]
            env["HANDRAIL_WORKFLOWS"] = str(self.workflows)  # its `handrail start` has no --workflows
        return env

    def gemini(self, *args: str, on_path: bool = False, check: bool = True) -> Ran:
        ran = run_harness([str(GEMINI), *args], self.gemini_env(on_path=on_path), self.workspace)
        assert not self.model.errors, (self.model.errors, ran.stderr[-3000:])
        if check:
            assert ran.exit_code == 0, ran.stderr[-3000:]
        return ran


@pytest.fixture
def gemini_world(tmp_path: Path) -> Iterator[GeminiWorld]:
    require(GEMINI)
    model = GeminiModel()
    try:
        yield GeminiWorld(tmp_path, model)
    finally:
        model.close()
