"""HTTP hooks fail closed (spec/gate.md, "When the gate cannot judge"): Claude Code reads
a non-2xx answer as "go on", so a real `handrail serve` answers what it cannot read or
judge with 200 and the harness's blocking form while a run of the caller is active,
and with 400 only where none is; and the `--server` relay refuses with exit 2 when
the server gives no answer while a run is known to be active."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.gate.runs import ROOT, GateWorld, claude_input, gate_command
from tests.gate.test_gate_fail_closed import CRASH
from tests.gate.test_gate_http import ANA, call, hook, serving
from tests.helpers.http import HttpServer

DEEP = b'{"hook_event_name": "PreToolUse", "a": ' + b"[" * 1000 + b"]" * 1000 + b"}"
UNREADABLE = {
    "nested 1,000 deep": (DEEP, "nests too deep", "pre"),
    "not JSON": (b'{"hook_event_name": "Stop", "cwd": ', "is not JSON", "stop"),
    "over the limit": (b'{"x": "' + b"a" * (1 << 20) + b'"}', "larger than", "any"),
    "a JSON array": (b'[{"hook_event_name": "PreToolUse"}]', "a JSON array", "any"),
}


@pytest.fixture
def server(world: GateWorld) -> Iterator[HttpServer]:
    with serving(world) as started:
        yield started


@pytest.fixture(scope="module")
def idle_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """One server for the tests that start no run on it (each start is a second or two)."""
    idle = GateWorld(tmp_path_factory.mktemp("idle"))
    with serving(idle) as started:
        yield started
    idle.close()


def start(world: GateWorld, server: HttpServer) -> str:
    arguments = {"workflowId": "gate-fixture", "goal": "Add a discount", "workspace": str(world.workspace)}
    return str(call(server, "workflow_start", arguments)["runId"])


def blocking(answered: httpx.Response, form: str) -> str:
    """The reason of Claude Code's blocking form, asserting it is one (`form` "any": the
    event's own where the body names it, else `decision: "block"`)."""
    assert answered.status_code == 200, answered.text
    said = answered.json()
    if form == "pre" or (form == "any" and "hookSpecificOutput" in said):
        out = said["hookSpecificOutput"]
        assert (out["hookEventName"], out["permissionDecision"]) == ("PreToolUse", "deny")
        return str(out["permissionDecisionReason"])
    assert said["decision"] == "block"
    return str(said["reason"])


@pytest.mark.parametrize("name", list(UNREADABLE))
def test_a_body_the_gate_cannot_read_is_refused_while_a_run_is_active(
    world: GateWorld, server: HttpServer, name: str
) -> None:
    body, said, form = UNREADABLE[name]
    start(world, server)
    reason = blocking(hook(server, body), form)
    assert said in reason and "refused until the gate can judge" in reason


@pytest.mark.parametrize("name", list(UNREADABLE))
def test_a_body_the_gate_cannot_read_with_no_run_is_a_400_naming_it(
    idle_server: HttpServer, name: str
) -> None:
    body, said, _ = UNREADABLE[name]
    answered = hook(idle_server, body)
    assert answered.status_code == 400
    assert said in answered.json()["error"]


def test_a_readable_cwd_no_run_holds_is_a_400_and_one_a_run_holds_is_refused(
    world: GateWorld, server: HttpServer
) -> None:
    start(world, server)
    elsewhere = claude_input(world, "PreToolUse").replace(str(world.workspace), str(world.root))
    assert hook(server, elsewhere).status_code == 400  # no tool_name, and no run holds that cwd
    here = claude_input(world, "PreToolUse")
    assert "has no tool_name" in blocking(hook(server, here), "pre")


def test_a_relayed_json_harness_body_is_refused_by_the_exit_code_it_gives(
    world: GateWorld, server: HttpServer
) -> None:
    start(world, server)
    answered = server.client.post(
        f"{server.base}/hooks/gemini", content=DEEP, headers={"Authorization": f"Bearer {ANA}"}
    )
    assert answered.status_code == 200
    assert answered.json()["exitCode"] == 2 and "nests too deep" in answered.json()["stderr"]


def test_a_bug_planted_in_the_servers_judging_refuses_while_a_run_is_active(
    world: GateWorld, tmp_path: Path
) -> None:
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "sitecustomize.py").write_text(CRASH)
    path = os.pathsep.join([str(planted), str(ROOT / "src")])
    with serving(world, env={"PYTHONPATH": path}) as server:
        read = claude_input(world, "PreToolUse", tool_name="Read", tool_input={"file_path": "src/cart.py"})
        quiet = hook(server, read)
        assert quiet.status_code == 200 and b"deny" not in quiet.content  # no run: a warning only
        start(world, server)
        assert "a bug in the decision" in blocking(hook(server, read), "pre")
        stop = claude_input(world, "Stop", stop_hook_active=False)
        assert "a bug in the decision" in blocking(hook(server, stop), "stop")
        after = claude_input(world, "PostToolUse", tool_name="Bash", tool_input={"command": "ls"})
        assert "a bug in the decision" in blocking(hook(server, after), "post")


def relay(world: GateWorld, url: str, home: Path) -> subprocess.CompletedProcess[bytes]:
    """`handrail gate pre-tool-use --server URL`, with a home of its own (the agent's
    machine): what it knows of runs it learns from the server's answers."""
    env = world.env() | {"HANDRAIL_TOKEN": ANA, "HANDRAIL_HOME": str(home)}
    edit = claude_input(world, "PreToolUse", tool_name="Read", tool_input={"file_path": "src/cart.py"})
    return subprocess.run(
        [*gate_command("pre-tool-use"), "--server", url],
        input=edit.encode(),
        capture_output=True,
        cwd=world.workspace,
        env=env,
        timeout=60,
    )


def test_the_relay_refuses_with_exit_2_when_the_server_is_down_while_a_run_is_active(
    world: GateWorld, tmp_path: Path
) -> None:
    home = tmp_path / "agent-home"
    home.mkdir()
    with serving(world) as server:
        url = server.base
        assert relay(world, url, home).returncode == 0  # no run yet: the server knows none
        start(world, server)
        assert relay(world, url, home).returncode == 0  # a read the step allows; the run is seen
    down = relay(world, url, home)
    assert down.returncode == 2, down.stderr
    assert b"cannot reach" in down.stderr and b"refusing" in down.stderr


def test_the_relay_lets_the_action_through_when_the_server_is_down_and_no_run_was_seen(
    world: GateWorld, tmp_path: Path
) -> None:
    home = tmp_path / "agent-home"
    home.mkdir()
    down = relay(world, "http://127.0.0.1:9", home)
    assert down.returncode == 0 and b"allowing" in down.stderr


def test_gate_install_with_a_server_writes_command_hooks_that_refuse_when_the_server_goes_down(
    world: GateWorld, tmp_path: Path
) -> None:
    """Claude Code goes on when an HTTP hook cannot reach the server, so `--server` alone
    installs command hooks that ask it, and those refuse then where a run was seen."""
    home = tmp_path / "agent-home"
    home.mkdir()
    env = world.env() | {"HANDRAIL_TOKEN": ANA, "HANDRAIL_HOME": str(home)}
    settings = world.workspace / ".claude" / "settings.json"
    read = claude_input(world, "PreToolUse", tool_name="Read", tool_input={"file_path": "src/cart.py"})
    with serving(world) as server:
        install = [*gate_command("install", "claude-code"), "--server", server.base]
        done = subprocess.run(
            install, capture_output=True, text=True, cwd=world.workspace, env=env, timeout=60
        )
        assert done.returncode == 0, done.stderr
        hooks = json.loads(settings.read_text())["hooks"]
        handlers = [group["hooks"][0] for groups in hooks.values() for group in groups]
        assert {handler["type"] for handler in handlers} == {"command"}
        command = hooks["PreToolUse"][0]["hooks"][0]["command"]
        assert f"gate pre-tool-use --harness claude-code --server {server.base}" in command

        def as_claude_code_runs_it() -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["sh", "-c", command],
                input=read,
                capture_output=True,
                text=True,
                cwd=world.workspace,
                env=env,
            )

        start(world, server)
        assert as_claude_code_runs_it().returncode == 0  # a read the step allows; the run is seen
    down = as_claude_code_runs_it()
    assert down.returncode == 2, down.stderr
    assert "cannot reach" in down.stderr and "refusing" in down.stderr


def test_http_hooks_are_only_for_claude_code_with_a_server(world: GateWorld) -> None:
    for given in (
        ["claude-code", "--http-hooks"],
        ["codex", "--server", "http://127.0.0.1:9", "--http-hooks"],
    ):
        done = subprocess.run(
            [*gate_command("install"), *given],
            capture_output=True,
            text=True,
            cwd=world.workspace,
            env=world.env(),
        )
        assert done.returncode == 1 and "--http-hooks is for claude-code with --server" in done.stderr
        assert not (world.workspace / ".claude" / "settings.json").exists()
