"""The packages in integrations/ (a Claude Code plugin, a Gemini CLI extension) bundle
handrail's MCP server with the gate's hooks: their hook commands are the ones
`handrail gate install` writes, and they answer the harness's input when run."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

import handrail
from handrail.gate import claude_code, hook_options, install, json_settings
from handrail.runs.gate import own_tool
from tests.gate.runs import ROOT, GateWorld, as_the_harness_runs

PLUGIN = ROOT / "integrations" / "claude-code-plugin"
EXTENSION = ROOT / "integrations" / "gemini-extension"
SERVER = {"command": "handrail", "args": ["start"]}


def read(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


def test_the_claude_code_plugin_holds_the_hooks_gate_install_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install, "_program", lambda: ["handrail"])  # the plugin finds handrail on PATH
    parser = argparse.ArgumentParser()
    hook_options.add_arguments(parser)
    entries = install.claude_entries(parser.parse_args(["install", "claude-code"]))
    assert read(PLUGIN / "hooks" / "hooks.json")["hooks"] == {
        name: [group] for name, group in entries.items()
    }
    assert read(PLUGIN / ".mcp.json") == {"mcpServers": {"handrail": SERVER}}
    manifest = read(PLUGIN / ".claude-plugin" / "plugin.json")
    assert (manifest["name"], manifest["version"]) == ("handrail", handrail.__version__)


def test_the_plugins_own_run_tools_are_handrails_own_to_the_gate() -> None:
    # server `handrail` of plugin `handrail`: Claude Code names its tools mcp__plugin_handrail_handrail__*
    action = claude_code.action_of("mcp__plugin_handrail_handrail__workflow_continue", {}, "/w")
    assert action is not None and own_tool(action.target)


def test_the_gemini_extension_holds_the_hooks_gate_install_writes() -> None:
    settings: dict[str, Any] = {}
    json_settings.merge(
        json_settings.HARNESSES["gemini"],
        settings,
        lambda event: ["handrail", "gate", event, "--harness", "gemini"],
        install=True,
    )
    assert read(EXTENSION / "hooks" / "hooks.json") == settings
    manifest = read(EXTENSION / "gemini-extension.json")
    assert manifest["mcpServers"] == {"handrail": SERVER}
    assert (manifest["name"], manifest["version"]) == ("handrail", handrail.__version__)


@pytest.mark.parametrize(
    ("package", "event", "said"),
    [
        (PLUGIN, "Stop", {"decision": "block"}),
        (EXTENSION, "AfterAgent", {"decision": "deny"}),
    ],
)
def test_a_packaged_stop_hook_refuses_a_stop_at_an_unfinished_step(
    world: GateWorld, package: Path, event: str, said: dict[str, str]
) -> None:
    world.start("plan")
    groups = read(package / "hooks" / "hooks.json")["hooks"][event]
    command = groups[0]["hooks"][0]["command"]
    stdin = json.dumps({"hook_event_name": event, "session_id": "s", "cwd": str(world.workspace)})
    ran = as_the_harness_runs(world, command, stdin, os.path.dirname(sys.executable))
    assert ran.exit_code == 0, ran.stderr
    answer = json.loads(ran.stdout)
    assert {key: answer[key] for key in said} == said
    assert "step 'plan' (1 of 4)" in answer["reason"]
    assert shlex.split(command)[0] == "handrail"
