"""An agent's `workflow_abandon` is recorded as the agent's, apart from a person's
`handrail runs abandon`; a workflow that says `"abandon": "person"` is ended by a
person only, and while the gate watches such a run, the command line the agent shares
ends it only with the person's passkey. Real service, real SQLite store, real
`handrail gate` and `handrail runs abandon` processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from handrail.catalog import load_catalog
from handrail.cli import main
from handrail.model.errors import SecurityError
from handrail.model.request import Request
from handrail.service.core import Service
from tests.gate.runs import GateWorld, claude_input
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

AGENT = Request(session="mcp-session-7")


def service_with(tmp_path: Path, **more: Any) -> tuple[Service, str]:
    write(tmp_path / "flows", {**build_feature(), **more})
    workspace = tmp_path / "work"
    workspace.mkdir()
    service = Service(load_catalog(tmp_path / "flows", bundled=False))
    run = service.call(
        "workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Cart", "workspace": str(workspace)}
    )
    return service, str(run["runId"])


def abandoned(service: Service, run: str) -> dict[str, Any]:
    [event] = [e for e in service.runs.ledger.events(run) if e.type == "abandoned"]
    return dict(event.data)


def test_an_agents_abandon_is_recorded_with_its_session_and_a_persons_as_a_persons(tmp_path: Path) -> None:
    service, run = service_with(tmp_path)
    try:
        service.call("workflow_abandon", {"runId": run, "reason": "stuck"}, AGENT)
        assert abandoned(service, run) == {"reason": "stuck", "by": "agent", "session": "mcp-session-7"}
        other = service.call(
            "workflow_start",
            {"workflowId": WORKFLOW_ID, "goal": "Again", "workspace": str(tmp_path / "work")},
        )["runId"]
    finally:
        service.close()
    assert main(["runs", "abandon", other, "--reason", "not needed"]) == 0
    again = Service(load_catalog(tmp_path / "flows", bundled=False))
    try:
        assert abandoned(again, other) == {"reason": "not needed", "by": "person"}
    finally:
        again.close()


def test_a_workflow_that_leaves_abandoning_to_a_person_refuses_the_agent(tmp_path: Path) -> None:
    service, run = service_with(tmp_path, abandon="person")
    try:
        with pytest.raises(SecurityError) as refused:
            service.call("workflow_abandon", {"runId": run, "reason": "bored"}, AGENT)
        assert refused.value.code == -32007 and f"handrail runs abandon {run}" in str(refused.value)
        assert service.call("workflow_resume", {"runId": run})["status"] == "active"
    finally:
        service.close()
    assert main(["runs", "abandon", run]) == 0


def test_check_knows_the_abandon_field_and_names_a_wrong_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "good", {**build_feature(), "abandon": "person"})
    assert main(["check", str(tmp_path / "good")]) == 0
    write(tmp_path / "bad", {**build_feature(), "abandon": "nobody"})
    capsys.readouterr()
    assert main(["check", str(tmp_path / "bad")]) != 0
    assert "abandon" in capsys.readouterr().out


def only_a_person_ends(world: GateWorld) -> None:
    """The gate fixture's workflow, saying `"abandon": "person"`."""
    path = world.workflows / "gate-fixture.json"
    path.write_text(json.dumps({**json.loads(path.read_text("utf-8")), "abandon": "person"}), "utf-8")


def watched(world: GateWorld) -> str:
    """A run of the fixture that the gate has seen a tool call of."""
    run = world.start(at="implement")
    read = {"file_path": str(world.workspace / "README.md")}
    world.gate("pre-tool-use", claude_input(world, "PreToolUse", tool_name="Read", tool_input=read))
    assert world.gate_events(), "the gate did not see the run"
    return run


def abandon_in_the_shell(world: GateWorld, run: str) -> subprocess.CompletedProcess[str]:
    """`handrail runs abandon RUN` as the agent runs it in its shell: a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "handrail", "runs", "abandon", run, "--database", world.url],
        capture_output=True,
        text=True,
        env=world.env(),
        cwd=world.workspace,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_the_agents_shell_cannot_abandon_a_run_only_a_person_ends_while_the_gate_watches_it(
    tmp_path: Path,
) -> None:
    world = GateWorld(tmp_path)
    try:
        only_a_person_ends(world)
        run = watched(world)
        refused = abandon_in_the_shell(world, run)
        assert refused.returncode == 1 and refused.stdout == ""
        assert 'the gate watches this run, its workflow says "abandon": "person"' in refused.stderr
        assert "abandon it with your passkey" in refused.stderr
        assert f"http://localhost:8766/runs/{run}" in refused.stderr
        assert world.runs.ledger.store.get(run).status == "active"  # type: ignore[union-attr]
        assert "abandoned" not in [e["type"] for e in world.events()]
        stop = world.gate("stop", claude_input(world, "Stop", stop_hook_active=False))
        assert stop.json()["decision"] == "block"  # the gate goes on holding the agent to the run
    finally:
        world.close()


def test_the_command_line_still_abandons_a_run_the_gate_watches_when_its_workflow_leaves_it_to_the_agent(
    tmp_path: Path,
) -> None:
    world = GateWorld(tmp_path)
    try:
        run = watched(world)
        assert main(["runs", "abandon", run, "--database", world.url]) == 0
        assert abandoned_event(world) == {"reason": "abandoned from the command line", "by": "person"}
    finally:
        world.close()


def test_the_command_line_still_abandons_a_run_only_a_person_ends_where_no_gate_watches_it(
    tmp_path: Path,
) -> None:
    world = GateWorld(tmp_path)
    try:
        only_a_person_ends(world)
        world.start(at="implement")
        assert main(["runs", "abandon", str(world.run_id), "--database", world.url]) == 0
        assert abandoned_event(world) == {"reason": "abandoned from the command line", "by": "person"}
    finally:
        world.close()


def abandoned_event(world: GateWorld) -> dict[str, Any]:
    [event] = [e for e in world.events() if e["type"] == "abandoned"]
    return {k: v for k, v in event.items() if k in ("reason", "by", "person", "via", "presence")}
