"""Claude Code's settings changed during a session (its ConfigChange hook), with the
gate installed by `handrail gate install` and run as Claude Code runs it: a change
that takes the gate out while a run is active is refused, whatever stands in place of
the settings file, and the command hook asking a server says it cannot answer this."""

from __future__ import annotations

import json
import os
import sys

from tests.gate.runs import GateWorld, as_the_harness_runs, claude_input
from tests.gate.test_gate_install import handrail


def config_change(world: GateWorld, source: str = "project_settings") -> str:
    path = world.workspace / ".claude" / "settings.json"
    return claude_input(world, "ConfigChange", source=source, file_path=str(path))


def installed_command(world: GateWorld) -> str:
    settings = json.loads((world.workspace / ".claude" / "settings.json").read_text())
    command: str = settings["hooks"]["ConfigChange"][0]["hooks"][0]["command"]
    return command


def test_a_script_that_rewrites_the_settings_without_the_gate_is_refused_while_a_run_is_active(
    world: GateWorld,
) -> None:
    assert handrail(world, "gate", "install", "claude-code").returncode == 0
    command = installed_command(world)
    program = os.path.dirname(sys.executable)
    world.start("plan")
    settings = world.workspace / ".claude" / "settings.json"
    kept = as_the_harness_runs(world, command, config_change(world), program)
    assert (kept.exit_code, kept.stdout) == (0, ""), kept.stderr

    # what a script the agent ran could do: the file is rewritten without handrail's Stop hook
    rewritten = json.loads(settings.read_text())
    del rewritten["hooks"]["Stop"]
    settings.write_text(json.dumps(rewritten, indent=2))
    refused = as_the_harness_runs(world, command, config_change(world), program)
    assert refused.exit_code == 0, refused.stderr
    answer = json.loads(refused.stdout)
    assert answer["decision"] == "block" and "leaves out the gate's hooks (Stop)" in answer["reason"]
    assert answer["systemMessage"] == answer["reason"]
    recorded = world.gate_events()[-1]
    assert (recorded["event"], recorded["decision"]) == ("config", "block")

    world.complete("plan")
    world.complete("implement")
    world.complete("test")
    world.complete("release")
    world.approve()
    finished = as_the_harness_runs(world, command, config_change(world), program)
    assert (finished.exit_code, finished.stdout) == (0, "")  # no run is active any more


def test_a_fifo_in_place_of_the_settings_is_read_as_no_settings_without_blocking(world: GateWorld) -> None:
    world.start("plan")
    folder = world.workspace / ".claude"
    folder.mkdir()
    os.mkfifo(folder / "settings.json")
    ran = world.gate("config-change", config_change(world), "--harness", "claude-code")
    assert ran.exit_code == 0, ran.stderr
    assert json.loads(ran.stdout)["decision"] == "block"


def test_the_command_hook_asking_a_server_does_not_answer_a_settings_change(world: GateWorld) -> None:
    world.start("plan")
    ran = world.gate(
        "config-change", config_change(world), "--harness", "claude-code", "--server", "http://127.0.0.1:9"
    )
    assert (ran.exit_code, ran.stdout) == (1, "")  # Claude Code's non-blocking error
    assert ran.stderr == "handrail gate: ConfigChange is answered from the run store; --server cannot\n"


def test_a_hook_that_asks_another_run_store_does_not_count_as_the_gate(world: GateWorld) -> None:
    database = world.url
    assert handrail(world, "gate", "install", "claude-code", "--database", database).returncode == 0
    command = installed_command(world)
    program = os.path.dirname(sys.executable)
    world.start("plan")
    settings = world.workspace / ".claude" / "settings.json"
    kept = as_the_harness_runs(world, command, config_change(world), program)
    assert (kept.exit_code, kept.stdout) == (0, ""), kept.stderr

    rewritten = json.loads(settings.read_text())
    handler = rewritten["hooks"]["PreToolUse"][0]["hooks"][0]
    handler["command"] = handler["command"].replace(database, database + "-elsewhere")
    settings.write_text(json.dumps(rewritten, indent=2))
    refused = as_the_harness_runs(world, command, config_change(world), program)
    assert refused.exit_code == 0, refused.stderr
    assert "leaves out the gate's hooks (PreToolUse)" in json.loads(refused.stdout)["reason"]


def test_http_hooks_count_only_when_they_post_to_the_server_the_gate_was_installed_with(
    world: GateWorld,
) -> None:
    assert handrail(world, "gate", "install", "claude-code").returncode == 0
    command = installed_command(world)  # the ConfigChange command stays: it never asks a server
    server = "http://127.0.0.1:8765"
    assert (
        handrail(world, "gate", "install", "claude-code", "--server", server, "--http-hooks").returncode == 0
    )
    program = os.path.dirname(sys.executable)
    world.start("plan")
    settings = world.workspace / ".claude" / "settings.json"
    rewritten = json.loads(settings.read_text())
    assert rewritten["hooks"]["PreToolUse"][0]["hooks"][0]["url"] == server + "/hooks/claude-code"
    kept = as_the_harness_runs(world, command, config_change(world), program)
    assert (kept.exit_code, kept.stdout) == (0, ""), kept.stderr

    rewritten["hooks"]["Stop"][0]["hooks"][0]["url"] = "http://127.0.0.1:9/hooks/claude-code"
    settings.write_text(json.dumps(rewritten, indent=2))
    refused = as_the_harness_runs(world, command, config_change(world), program)
    assert refused.exit_code == 0, refused.stderr
    assert "leaves out the gate's hooks (Stop)" in json.loads(refused.stdout)["reason"]
