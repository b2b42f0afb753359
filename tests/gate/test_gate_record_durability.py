"""A refusal's `gate` event is committed without waiting for the disk (spec/gate.md,
"What the records survive"): still, once the hook has answered, the record is in the
store whatever process is killed. Each test kills the process that wrote it with
SIGKILL right after it answered, and reads the store from a connection of its own."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gate.runs import GateWorld, claude_input, gate_command
from tests.helpers.http import HttpServer


@pytest.fixture
def world(tmp_path: Path) -> Iterator[GateWorld]:
    found = GateWorld(tmp_path)
    found.start("plan")
    found.close()
    yield found


def gate_records(database: Path) -> list[dict[str, str]]:
    """The `gate` events of the store, read as a new process would read them."""
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT data FROM run_events WHERE type = 'gate' ORDER BY seq").fetchall()
    return [json.loads(row[0]) for row in rows]


def an_edit(world: GateWorld, path: str) -> str:
    return claude_input(world, "PreToolUse", tool_name="Edit", tool_input={"file_path": path})


def test_a_refusal_answered_by_the_command_hook_is_in_the_store_after_the_hook_is_killed(
    world: GateWorld,
) -> None:
    hook = subprocess.Popen(
        gate_command("pre-tool-use", "--harness", "claude-code"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=world.workspace,
        env=world.env(),
    )
    try:
        assert hook.stdin is not None and hook.stdout is not None
        hook.stdin.write(an_edit(world, "src/cart.py").encode())
        hook.stdin.close()
        answer = json.loads(hook.stdout.readline())
        hook.send_signal(signal.SIGKILL)
    finally:
        hook.kill()
        hook.wait(timeout=30)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert gate_records(world.database)[-1]["decision"] == "deny"


def test_refusals_answered_by_serve_are_in_the_store_after_the_server_is_killed(world: GateWorld) -> None:
    args = ("--no-bundled", "--workflows", str(world.workflows), "--database", world.url)
    with HttpServer(*args, env={"HANDRAIL_HOME": str(world.handrail_home)}) as server:
        headers = {"Content-Type": "application/json"}
        for path in ("src/a.py", "src/b.py", "src/c.py"):
            answered = server.client.post(
                f"{server.base}/hooks/claude-code", content=an_edit(world, path), headers=headers
            )
            assert answered.json()["hookSpecificOutput"]["permissionDecision"] == "deny", answered.text
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(timeout=30)
    refused = [r.get("action", "") for r in gate_records(world.database) if r["decision"] == "deny"]
    assert [path.split(":")[-1] for path in refused[-3:]] == ["src/a.py", "src/b.py", "src/c.py"]
