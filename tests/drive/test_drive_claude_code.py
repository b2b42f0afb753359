"""`handrail drive` with the pinned Claude Code as its agent and the scripted model
playing it: whole runs, retries with the issues, a run that never passes, a budget
crossed, a person's approval waited for, and the driver killed mid-step."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.drive.scripted_agent import Agent, submit, tool
from tests.drive.world import DriveWorld
from tests.gate.real_harness.anthropic_model import ScriptedModel, Turn, say
from tests.gate.real_harness.claude_code_world import require_claude
from tests.gate.real_harness.coding_task_agent import DISCOUNTED, IMPLEMENTED, PARTS, UNDERSTAND, VERIFIED
from tests.helpers.receiver import Receiver

pytestmark = pytest.mark.slow


@pytest.fixture
def world(tmp_path: Path) -> Iterator[DriveWorld]:
    require_claude()
    model = ScriptedModel()
    try:
        yield DriveWorld(tmp_path, model)
    finally:
        model.close()


def run_id_of(stderr: str) -> str:
    found = re.search(r"started run (run_\w+)", stderr)
    assert found, stderr
    return found.group(1)


def test_a_whole_coding_task_is_driven_through_retries_and_a_persons_approval_to_completion(
    world: DriveWorld,
) -> None:
    cart = str(world.repo / "src" / "cart.py")
    # a change to a public API: the plan waits for a person's approval
    public = {"taskSize": "medium", "touchesPublicApi": True, "openQuestions": 0}
    agent = Agent(
        {
            # twice too short for the step's rules, then as it asks
            "understand": [submit("understand", lambda n: UNDERSTAND if n > 2 else "short", public)],
            "plan": [submit("plan", json.dumps({"parts": PARTS}), {"planParts": PARTS})],
            "implement-part": [
                tool("Write", file_path=cart, content=DISCOUNTED),
                submit("implement-part", IMPLEMENTED),
            ],
            "verify": [submit("verify", VERIFIED)],
        }
    )
    agent.play_on(world.model)
    report = world.root / "report.md"
    first = world.drive("coding-task", "--goal", "Give the cart's total a discount", "--no-wait")

    # the plan waits for a person: --no-wait exits 3 and says where
    assert first.returncode == 3, first.stderr
    run_id = run_id_of(first.stderr)
    assert f"handrail runs approve {run_id}" in first.stderr
    understood = [p for p in agent.prompts if 'stepId "understand"' in p]
    assert len(understood) == 3
    assert "not accepted" not in understood[0] and "at least 300 characters" in understood[2]
    assert world.events(run_id, "rejected")[0]["stepId"] == "understand"

    world.approve(run_id)
    second = world.drive("--resume", run_id, "--report", str(report), "--json")

    assert second.returncode == 0, second.stderr
    outcome = json.loads(second.stdout)
    assert outcome["status"] == "completed" and outcome["runId"] == run_id
    assert (world.repo / "src" / "cart.py").read_text() == DISCOUNTED
    record = world.record(run_id)
    accepted = [e["stepId"] for e in record["events"] if e["type"] == "accepted"]
    assert accepted == ["understand", "plan", "implement-part", "verify"]
    checks = [e for e in record["events"] if e["type"] == "check"]
    assert [(e["check"], e["passed"]) for e in checks] == [("command", True), ("git", True)]
    usage = world.events(run_id, "usage")
    assert [e["stepId"] for e in usage] == ["understand"] * 3 + ["plan", "implement-part", "verify"]
    assert all(e["costUsd"] > 0 and e["outputTokens"] > 0 and e["agent"] == "claude-code" for e in usage)
    assert len(agent.prompts) == 6
    # the gate held each session (its hooks given by --settings) and let it stop once its step was accepted
    stops = [e["decision"] for e in world.events(run_id, "gate") if e["event"] == "stop"]
    refused = ["block", "allow:limit"]  # not accepted: held to its step once, then the driver tries again
    # understand (twice refused), understand, plan (waiting on a person), implement-part; verify ended the run
    assert stops == [*refused, *refused, "allow:driven-step-accepted", "allow", "allow:driven-step-accepted"]
    assert not (world.repo / ".claude").exists() and not (world.home / ".claude" / "settings.json").exists()
    summary = report.read_text()
    assert "completed" in summary
    # the report says which checks the verify step's evidence ran, and how they came out
    assert "Checks of `verify`, its last attempt:" in summary and ": passed" in summary


TWO_STEPS = Path(__file__).with_name("two-steps.json")  # a note written, then reviewed


def two_steps(world: DriveWorld) -> None:
    world.add_workflow(json.loads(TWO_STEPS.read_text()))


def test_an_agent_that_never_passes_stops_the_driver_naming_the_step_and_its_last_issues(
    world: DriveWorld, tmp_path: Path
) -> None:
    two_steps(world)
    agent = Agent({"write": [submit("write", "Nothing yet.")]})
    agent.play_on(world.model)
    report, summary = tmp_path / "report.xml", tmp_path / "summary.md"
    world.extra_env["GITHUB_STEP_SUMMARY"] = str(summary)
    done = world.drive("two-steps", "--attempts", "2", "--report", str(report))

    assert done.returncode == 1, done.stderr
    assert "step 'write' was not accepted after 2 attempts: Say that the note is written" in done.stdout
    assert len(agent.prompts) == 2 and "Say that the note is written" in agent.prompts[1]
    run_id = run_id_of(done.stderr)
    assert world.record(run_id)["run"]["status"] == "active"
    assert [e["stepId"] for e in world.events(run_id, "rejected")] == ["write", "write"]
    assert '<testcase classname="two-steps" name="write"><failure message=' in report.read_text()
    assert "| Write the note | 2 | no |" in summary.read_text()


CHECKED = {
    "id": "checked",
    "name": "Checked",
    "description": "A change whose step is done when the project's test command passes.",
    "version": "1.0.0",
    "steps": [
        {
            "id": "change",
            "title": "Make the change",
            "prompt": "Give the cart's total a discount, then report it.",
            "checks": [
                {
                    "type": "command",
                    "run": {"command": "test"},
                    "message": "The project's test command passes",
                }
            ],
        }
    ],
}


def test_an_agent_whose_check_fails_twice_is_started_again_with_the_checks_words_and_then_passes(
    world: DriveWorld,
) -> None:
    world.add_workflow(CHECKED)
    cart = str(world.repo / "src" / "cart.py")
    use_write = tool("Write", file_path=cart, content=DISCOUNTED)
    report = submit("change", "The discount is in.")

    def first(run_id: str, attempt: int) -> Turn:  # twice it reports the change without making it
        return use_write(run_id, attempt) if attempt == 3 else report(run_id, attempt)

    def then(run_id: str, attempt: int) -> Turn:
        return report(run_id, attempt) if attempt == 3 else say("Reported.")

    agent = Agent({"change": [first, then]})
    agent.play_on(world.model)
    done = world.drive("checked", "--json")

    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["status"] == "completed" and outcome["steps"][0]["attempts"] == 3
    run_id = outcome["runId"]
    checks = world.events(run_id, "check")
    assert [(e["check"], e["passed"]) for e in checks] == [
        ("command", False),
        ("command", False),
        ("command", True),
    ]
    assert [e["stepId"] for e in world.events(run_id, "rejected")] == ["change", "change"]
    assert "The project's test command passes" in agent.prompts[1]  # the retry is told which check failed
    assert outcome["steps"][0]["checks"] == ["The project's test command passes: passed"]


SIGNOFF = {
    "id": "signoff",
    "name": "Sign-off",
    "description": "A note a person signs off before it is sent.",
    "version": "1.0.0",
    "steps": [
        {"id": "draft", "title": "Draft the note", "prompt": "Draft the note.", "requireConfirmation": True},
        {"id": "send", "title": "Send the note", "prompt": "Send the note."},
    ],
}


def test_a_step_waiting_for_a_person_is_notified_and_the_driver_goes_on_once_they_approve(
    world: DriveWorld,
) -> None:
    world.add_workflow(SIGNOFF)
    Agent({"draft": [submit("draft", "The draft.")], "send": [submit("send", "Sent.")]}).play_on(world.model)
    receiver = Receiver()
    try:
        approved: list[str] = []

        def person() -> None:  # approves once the notification reaches them
            (told,) = receiver.wait_for(1, timeout=120)
            approved.append(told.json["run"]["id"])
            world.approve(told.json["run"]["id"])

        thread = threading.Thread(target=person, daemon=True)
        thread.start()
        done = world.drive("signoff", "--notify", receiver.url, "--notify-secret", "whsec-test", "--json")
        thread.join(5)
    finally:
        receiver.stop()

    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["status"] == "completed" and approved == [outcome["runId"]]
    (first,) = receiver.received[:1]
    assert first.json["type"] == "run.awaiting_approval" and first.json["step"]["id"] == "draft", first.json
    assert "webhook-signature" in first.headers  # signed with the driver's secret


def test_a_budget_crossed_stops_the_driver_before_the_next_step(world: DriveWorld) -> None:
    two_steps(world)
    agent = Agent(
        {"write": [submit("write", "The note is written.")], "review": [submit("review", "reviewed")]}
    )
    agent.play_on(world.model)
    done = world.drive("two-steps", "--max-usd", "0.0001", "--json")

    assert done.returncode == 1, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["reason"].startswith("the budget of $0.0001 is crossed")
    assert outcome["steps"][0]["accepted"] and outcome["costUsd"] > 0.0001
    assert len(agent.prompts) == 1  # no agent for the review
    run = world.record(outcome["runId"])["run"]
    assert run["status"] == "active" and run["currentStep"]["id"] == "review"
    # the run waits at the review with the reason, in the usage event of the process that crossed it
    (used,) = world.events(outcome["runId"], "usage")
    assert used["stepId"] == "write" and used["stopped"] == outcome["reason"]


def test_the_driver_killed_mid_step_takes_its_agent_with_it_and_resume_accepts_no_step_twice(
    world: DriveWorld,
) -> None:
    two_steps(world)
    hold = threading.Event()
    agent = Agent(
        {"write": [submit("write", "The note is written.")], "review": [submit("review", "reviewed")]},
        hold=hold,
    )
    agent.play_on(world.model)
    driver = subprocess.Popen(
        world.drive_args("two-steps"), cwd=world.repo, env=world.env(), stderr=subprocess.PIPE, text=True
    )
    try:
        assert agent.holding.wait(60), "the agent never asked the model"
        children = [
            int(p) for p in Path(f"/proc/{driver.pid}/task/{driver.pid}/children").read_text().split()
        ]
        os.kill(driver.pid, signal.SIGKILL)
        _, stderr = driver.communicate(timeout=30)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert len(children) == 1
    # Claude Code had its own process group: the parent-death signal ended it
    assert wait_gone(children[0]), f"agent {children[0]} outlived the driver"
    hold.set()
    run_id = run_id_of(stderr)
    done = world.drive("--resume", run_id)

    assert done.returncode == 0, done.stderr
    assert [e["stepId"] for e in world.events(run_id, "accepted")] == ["write", "review"]


def wait_gone(pid: int, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":  # dead, waiting for init to reap it
            return True
        time.sleep(0.05)
    return False
