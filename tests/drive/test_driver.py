"""The driver's loop with a stand-in agent (a shell script given as --agent-command),
where no model is needed: an agent that submits nothing, and one the time budget ends."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from handrail.store import open_store
from tests.helpers.environment import child_env

HANDRAIL = Path(sys.executable).parent / "handrail"
TWO_STEPS = Path(__file__).with_name("two-steps.json")
RESULT = '{"type":"result","total_cost_usd":0.25,"num_turns":1,"usage":{"input_tokens":9,"output_tokens":4}}'


def drive(
    tmp_path: Path, agent: str, *args: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    (tmp_path / "workflows").mkdir(exist_ok=True)
    (tmp_path / "workflows" / TWO_STEPS.name).write_text(TWO_STEPS.read_text())
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\n" + agent + "\n")
    script.chmod(0o755)
    database = "sqlite:///" + str(tmp_path / "runs.db").lstrip("/")
    argv = [str(HANDRAIL), "drive", "two-steps", "--no-bundled", "--workflows", str(tmp_path / "workflows")]
    argv += ["--agent-command", str(script), "--workspace", str(tmp_path), "--database", database, "--json"]
    done = subprocess.run(
        [*argv, *args], env=child_env(tmp_path), capture_output=True, text=True, timeout=120
    )
    outcome = json.loads(done.stdout)
    store = open_store(database)
    try:
        run = store.get(outcome["runId"])
        assert run is not None
        usage = [{**e.data, "stepId": e.step_id} for e in store.events(run.id) if e.type == "usage"]
        return done, str(run.status), usage
    finally:
        store.close()


def test_an_agent_that_submits_nothing_is_tried_again_and_its_usage_recorded_each_time(
    tmp_path: Path,
) -> None:
    done, status, usage = drive(tmp_path, f"echo '{RESULT}'", "--attempts", "2")

    assert done.returncode == 1, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["reason"] == (
        "step 'write' was not accepted after 2 attempts: "
        "the agent ended without submitting the step through workflow_continue"
    )
    assert outcome["costUsd"] == 0.5 and outcome["steps"][0]["tokens"] == 26
    assert status == "active"
    assert [(e["attempt"], e["costUsd"], e["inputTokens"], e["reported"]) for e in usage] == [
        (1, 0.25, 9, True),
        (2, 0.25, 9, True),
    ]


def test_the_time_budget_ends_the_running_agent_and_the_run_waits_with_the_reason(tmp_path: Path) -> None:
    # six seconds: enough for the run to start on a loaded machine before the budget ends it
    done, status, usage = drive(tmp_path, "exec sleep 60", "--max-minutes", "0.1")

    assert done.returncode == 1, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["reason"].startswith("the budget of 0.1 minutes is crossed")
    assert "the time budget (--max-minutes) ended the agent" in outcome["reason"]
    (used,) = usage
    assert not used["reported"] and used["stopped"] == "the budget of 0.1 minutes is crossed"
    assert status == "active" and used["stepId"] == "write"


def test_a_run_abandoned_while_its_step_is_worked_ends_the_driver_with_exit_1(tmp_path: Path) -> None:
    database = "sqlite:///" + str(tmp_path / "runs.db").lstrip("/")
    # the agent's process ends the run as a person would, from the command line
    abandon = (
        'run=$(printf "%s" "$*" | sed -n \'s/.*runId "\\(run_[0-9a-f]*\\)".*/\\1/p\' | head -n 1)\n'
        f'{HANDRAIL} runs abandon "$run" --database {database} >/dev/null\n'
        f"echo '{RESULT}'"
    )
    done, status, usage = drive(tmp_path, abandon)

    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["reason"] == "the run was abandoned"
    assert status == "abandoned" and usage == []  # an ended run takes no more events
