"""Where an approval needs the person's passkey (spec/runs.md, "Presence"): the command
line while the gate watches the run, every channel when the workflow or the server asks
for it; elsewhere approvals work as before. The passkey ceremony itself is tried in a
real browser (tests/dashboard/test_passkeys_browser.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from handrail.compiler import compile_text
from handrail.model.request import LOCAL, Request
from handrail.model.workflow import Step
from handrail.runs import Runs
from handrail.runs.ledger import RunSettings
from handrail.runs.presence import PresenceNeeded
from handrail.store import open_store
from tests.gate.runs import GateWorld, claude_input

PERSON = Request(owner="local", scope="person")


def waiting(world: GateWorld) -> str:
    run = world.start(at="release")
    world.complete("release")
    return run


def presence_asked(world: GateWorld) -> None:
    """The fixture's workflow, its `release` step asking for the person's passkey."""
    path = world.workflows / "gate-fixture.json"
    document = json.loads(path.read_text("utf-8"))
    document["steps"][-1]["approval"] = {"presence": "passkey"}
    path.write_text(json.dumps(document), "utf-8")


def handrail(world: GateWorld, *argv: str, program: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*program, *argv, "--database", world.url],
        capture_output=True,
        text=True,
        env=world.env(),
        cwd=world.workspace,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


SPELLINGS = {
    "venv-program": [str(Path(sys.executable).parent / "handrail")],
    "python-m": [sys.executable, "-m", "handrail"],
}


@pytest.mark.slow
@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_the_agents_shell_cannot_approve_a_run_the_gate_watches_by_either_spelling(
    world: GateWorld, spelling: str
) -> None:
    run = waiting(world)
    read = {"file_path": str(world.workspace / "README.md")}
    world.gate("pre-tool-use", claude_input(world, "PreToolUse", tool_name="Read", tool_input=read))
    assert world.gate_events(), "the gate did not see the run"
    for verb in ("approve", "decline"):
        refused = handrail(world, "runs", verb, run, program=SPELLINGS[spelling])
        assert refused.returncode == 1
        assert refused.stdout == ""
        assert (
            "presence: the gate watches this run, and the cli is a channel the agent shares" in refused.stderr
        )
        assert f"http://localhost:8766/runs/{run}" in refused.stderr
    assert [e["type"] for e in world.events()][-1] == "gate"  # nothing decided


@pytest.mark.slow
def test_the_command_line_still_approves_a_run_no_gate_watches(world: GateWorld) -> None:
    run = waiting(world)
    done = handrail(world, "runs", "approve", run, program=SPELLINGS["python-m"])
    assert done.returncode == 0, done.stderr
    assert "approved by" in done.stdout


def test_a_workflow_asking_for_presence_refuses_every_channel_without_a_passkey(world: GateWorld) -> None:
    presence_asked(world)
    run = waiting(world)
    for via in ("cli", "dashboard", "api"):
        with pytest.raises(PresenceNeeded) as refused:
            world.runs.decide(PERSON, run, "approve", person="local", via=via)
        assert '"approval": {"presence": "passkey"}' in refused.value.message
        assert refused.value.data["rule"] == "presence"
    assert world.events()[-1]["type"] == "awaiting_approval"


def test_a_server_requiring_presence_refuses_a_persons_token_and_the_cli(world: GateWorld) -> None:
    run = waiting(world)
    requiring = Runs(lambda: open_store(world.url), RunSettings(require_presence=True))
    try:
        for via in ("api", "cli"):
            with pytest.raises(PresenceNeeded, match="--require-presence"):
                requiring.decide(PERSON, run, "decline", person="local", comment="no", via=via)
    finally:
        requiring.close()
    answer = world.runs.decide(LOCAL, run, "approve", person="local", via="api")
    assert answer["accepted"] is True


def test_check_knows_the_presence_field_and_refuses_another_value(world: GateWorld) -> None:
    document = json.loads((world.workflows / "gate-fixture.json").read_text("utf-8"))
    document["approval"] = {"presence": "passkey"}
    compiled = compile_text(json.dumps(document))
    assert compiled.errors == () and compiled.workflow is not None
    release = compiled.workflow.nodes["release"]
    assert isinstance(release, Step) and release.approval.presence == "passkey"  # the workflow's default
    document["approval"] = {"presence": "face"}
    refused = compile_text(json.dumps(document))
    assert refused.workflow is None
    assert [d.pointer for d in refused.errors] == ["/approval/presence"]
