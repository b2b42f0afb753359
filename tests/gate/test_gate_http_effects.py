"""The after-tool check over HTTP hooks (spec/gate.md, "Effects, not words"): a real
`handrail serve` answering POST /hooks/claude-code compares the run's workspace with
the baseline it took, puts back what the step forbids and records it, as the command
hook does; a `cwd` no run of the caller holds is never read or written."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gate.runs import GateWorld, claude_input
from tests.gate.test_gate_http import call, hook, serving
from tests.helpers.http import HttpServer

CART = "def total(items):\n    return sum(items)\n"
IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def repository(world: GateWorld, path: Path) -> None:
    (path / "src").mkdir(parents=True)
    (path / "docs").mkdir()
    (path / "src" / "cart.py").write_text(CART)
    (path / "docs" / "plan.md").write_text("# Plan\n")
    env = world.env() | IDENTITY
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "the shop"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True, timeout=60)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[GateWorld]:
    found = GateWorld(tmp_path)
    repository(found, found.workspace)
    yield found
    found.close()


@pytest.fixture
def server(world: GateWorld) -> Iterator[HttpServer]:
    with serving(world) as started:
        yield started


def planning(world: GateWorld, server: HttpServer) -> str:
    """A run at its plan step (edits of the code forbidden), its baseline taken at a prompt."""
    run = call(
        server,
        "workflow_start",
        {"workflowId": "gate-fixture", "goal": "Add a discount", "workspace": str(world.workspace)},
    )["runId"]
    world.run_id = run
    assert hook(server, claude_input(world, "UserPromptSubmit", prompt="go")).status_code == 200
    return str(run)


def bash(world: GateWorld, event: str, command: str = "ls", cwd: Path | None = None) -> str:
    fields = {"tool_name": "Bash", "tool_input": {"command": command}}
    body = claude_input(world, event, **fields)
    return body if cwd is None else body.replace(str(world.workspace), str(cwd))


def test_a_file_changed_during_a_step_that_forbids_it_is_put_back_over_http(
    world: GateWorld, server: HttpServer
) -> None:
    run = planning(world, server)
    cart = world.workspace / "src" / "cart.py"
    assert hook(server, bash(world, "PreToolUse")).status_code == 200
    cart.write_text(CART + "DISCOUNT = 0.5\n")  # what the Bash call did

    answered = hook(server, bash(world, "PostToolUse"))
    assert answered.status_code == 200
    said = answered.json()
    assert said["decision"] == "block" and "src/cart.py" in said["reason"]  # Claude Code's blocking form
    assert cart.read_text() == CART  # back byte for byte
    (violation,) = [e for e in world.events() if e["type"] == "violation"]
    assert violation["changes"][0]["target"] == str(cart)
    kept = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname)", f"refs/handrail/violations/{run}/"],
        cwd=world.workspace,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert kept.strip(), "what was undone is kept under refs/handrail/violations/"


def test_a_stop_after_a_forbidden_change_is_refused_naming_it(world: GateWorld, server: HttpServer) -> None:
    planning(world, server)
    cart = world.workspace / "src" / "cart.py"
    cart.write_text("")
    stop = hook(server, claude_input(world, "Stop", stop_hook_active=False)).json()
    assert stop["decision"] == "block" and "src/cart.py" in stop["reason"]
    assert cart.read_text() == CART


def test_nothing_changed_is_no_answer_and_an_allowed_change_stays(
    world: GateWorld, server: HttpServer
) -> None:
    planning(world, server)
    assert hook(server, bash(world, "PreToolUse")).content == b""
    assert hook(server, bash(world, "PostToolUse")).content == b""
    plan = world.workspace / "docs" / "plan.md"
    plan.write_text("# Plan\n\n1. the discount\n")  # the plan step allows its plan
    assert hook(server, bash(world, "PostToolUse")).content == b""
    assert plan.read_text() == "# Plan\n\n1. the discount\n"
    assert not [e for e in world.events() if e["type"] == "violation"]


def test_a_cwd_no_run_holds_is_neither_read_nor_written(world: GateWorld, server: HttpServer) -> None:
    planning(world, server)
    elsewhere = world.root / "elsewhere"
    repository(world, elsewhere)
    for event in ("UserPromptSubmit", "PreToolUse"):
        assert hook(server, bash(world, event, cwd=elsewhere)).status_code == 200
    (elsewhere / "src" / "cart.py").write_text("changed\n")
    answered = hook(server, bash(world, "PostToolUse", cwd=elsewhere))
    assert answered.status_code == 200 and answered.content == b""
    assert (elsewhere / "src" / "cart.py").read_text() == "changed\n"
    assert not (world.handrail_home / "gate").exists() or all(
        str(elsewhere) not in p.read_text(errors="replace")
        for p in (world.handrail_home / "gate").rglob("*")
        if p.is_file() and p.stat().st_size < 100_000
    )
