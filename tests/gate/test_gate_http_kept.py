"""What a `handrail serve` keeps between its HTTP hooks (the seal digests and seals of
the rows it read, store/state_seal.py; the step policies it compiled,
runs/gate_digest.py) never answers for a row that changed: a real server reads a run,
the row changes under it (through handrail, or past it with sqlite3), and its next hook
judges the row as it is now."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator

import httpx
import pytest

from tests.gate.runs import GateWorld, claude_input
from tests.gate.test_gate_http import call, hook, serving
from tests.helpers.http import HttpServer


@pytest.fixture
def server(world: GateWorld) -> Iterator[HttpServer]:
    with serving(world) as started:
        yield started


def started(world: GateWorld, server: HttpServer) -> str:
    arguments = {"workflowId": "gate-fixture", "goal": "Add a discount", "workspace": str(world.workspace)}
    return str(call(server, "workflow_start", arguments)["runId"])


def edit(world: GateWorld) -> str:
    return claude_input(world, "PreToolUse", tool_name="Edit", tool_input={"file_path": "src/cart.py"})


def read(world: GateWorld) -> str:
    return claude_input(world, "PreToolUse", tool_name="Read", tool_input={"file_path": "src/cart.py"})


def decision(answered: httpx.Response) -> tuple[str, str]:
    """A PreToolUse answer's decision and reason; ("allow", "") for no decision."""
    assert answered.status_code == 200, answered.text
    if not answered.content:
        return "allow", ""
    out = answered.json()["hookSpecificOutput"]
    return str(out["permissionDecision"]), str(out.get("permissionDecisionReason", ""))


def rewritten(world: GateWorld, run_id: str, column: str, change: dict[str, object]) -> None:
    """One JSON column of the run's row changed with sqlite3, past handrail."""
    with sqlite3.connect(world.database) as db:
        (text,) = db.execute(f"SELECT {column} FROM runs WHERE id = ?", (run_id,)).fetchone()
        value = json.loads(text)
        for key, part in change.items():
            value[key] = {**value[key], **part} if isinstance(part, dict) else part
        db.execute(f"UPDATE runs SET {column} = ? WHERE id = ?", (json.dumps(value), run_id))
    db.close()


def test_a_row_moved_on_with_sqlite3_after_the_server_read_it_is_refused_by_its_next_hook(
    world: GateWorld, server: HttpServer
) -> None:
    run_id = started(world, server)
    assert decision(hook(server, edit(world)))[0] == "deny"  # the session bound, the refusal written
    for _ in range(3):  # the row as written, read and read again: what the server keeps of it in use
        assert decision(hook(server, read(world))) == ("allow", "")
    rewritten(world, run_id, "position", {"step": {"id": "implement", "title": "Implement"}})
    verdict, reason = decision(hook(server, edit(world)))  # what step 'implement' would allow
    assert verdict == "deny" and "cannot judge" in reason, reason
    assert f"run {run_id} was changed outside handrail" in server.stderr


def test_a_loosened_gate_digest_written_past_the_store_is_refused_by_the_servers_next_hook(
    world: GateWorld, server: HttpServer
) -> None:
    run_id = started(world, server)
    assert decision(hook(server, edit(world)))[0] == "deny"  # the plan step's policy, compiled and kept
    assert decision(hook(server, read(world))) == ("allow", "")  # the row as written, read and kept
    rewritten(world, run_id, "gate", {"rules": {"allow": ["read", "edit"], "deny": []}})
    verdict, reason = decision(hook(server, edit(world)))
    assert verdict == "deny" and "cannot judge" in reason, reason
    assert "gate is not as sealed" in server.stderr


def test_a_step_moved_on_through_the_server_is_judged_by_the_next_steps_policy_at_once(
    world: GateWorld, server: HttpServer
) -> None:
    run_id = started(world, server)
    for _ in range(3):
        verdict, reason = decision(hook(server, edit(world)))
        assert verdict == "deny" and "does not allow edit" in reason, reason
    call(server, "workflow_continue", {"runId": run_id, "stepId": "plan", "output": "Plan: the discount."})
    assert decision(hook(server, edit(world))) == ("allow", "")  # 'implement' lets code be edited
