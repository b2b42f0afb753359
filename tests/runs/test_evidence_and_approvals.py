"""Checks and approvals in real runs: a real `handrail start` process, the official SDK
client, real files, a real git repository and real commands.

Checks: every type in one run (refused, then passing), a timeout that leaves no process
behind, a link out of the workspace, commands refused without --allow-commands, and
SIGTERM while a check runs. Approvals: a client that answers elicitation, and one that
does not (a person approves with `handrail runs approve` in another process while the
run waits), each on the 2025 handshake and on 2026-07-28.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.checks.workspaces import git, write
from tests.helpers.http import CLIENT_CAPABILITIES_KEY, HttpServer, envelope, modern_headers
from tests.helpers.server import ROOT, Server

pytestmark = pytest.mark.slow

FLOW = "evidence"
TEST_COMMAND = "test=sh -c 'test -f built.txt || { echo 1 test failed: no built.txt; exit 1; }'"
Elicit = Callable[[Any, types.ElicitRequestParams], Awaitable[types.ElicitResult]]


def _workflow(steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": FLOW,
        "name": "Evidence",
        "description": "Checks and approvals.",
        "version": "1.0.0",
        "steps": steps,
    }


def _set_up(tmp: Path, steps: list[dict[str, Any]]) -> Path:
    (tmp / "flows").mkdir()
    (tmp / "flows" / f"{FLOW}.json").write_text(json.dumps(_workflow(steps)))
    workspace = tmp / "workspace"
    workspace.mkdir()
    return workspace


def _env(tmp: Path) -> dict[str, str]:
    return {
        "HOME": str(tmp / "home"),
        "HANDRAIL_HOME": str(tmp / "handrail-home"),
        "PYTHONPATH": str(ROOT / "src"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }


def _server(tmp: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "handrail", "start", "--no-bundled", "--workflows", str(tmp / "flows"), *extra],
        env=_env(tmp),
        cwd=tmp / "workspace",
    )


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handrail", "runs", *args],
        env=_env(tmp),
        cwd=tmp / "workspace",
        capture_output=True,
        text=True,
        timeout=60,
    )


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert result.structured_content is not None, result
    content = dict(result.structured_content)
    return {"error": content} if result.is_error else content


def _session(
    tmp: Path,
    script: Callable[[Client], Awaitable[dict[str, Any]]],
    *extra: str,
    mode: str = "legacy",
    elicit: Elicit | None = None,
) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        async with Client(_server(tmp, *extra), mode=mode, elicitation_callback=elicit) as client:  # type: ignore[arg-type]
            with anyio.fail_after(60):
                return await script(client)

    return anyio.run(main)


def _start(goal: str) -> Callable[[Client], Awaitable[dict[str, Any]]]:
    async def script(client: Client) -> dict[str, Any]:
        return await _call(client, "workflow_start", {"workflowId": FLOW, "goal": goal})

    return script


# -- checks -------------------------------------------------------------------------------------


def test_every_check_type_decides_a_real_run_and_runs_show_has_the_evidence(tmp_path: Path) -> None:
    steps = [
        {
            "id": "build",
            "title": "Build",
            "prompt": "Build it, record the decision, commit.",
            "checks": [
                {
                    "type": "file",
                    "path": "docs/adr/*.md",
                    "contains": "^# Decision",
                    "message": "The ADR is written",
                },
                {"type": "git", "changes": True, "message": "The tree has changes"},
                {"type": "command", "run": {"command": "test"}, "message": "The tests pass"},
                {"type": "command", "run": ["sh", "-c", "pwd"], "message": "It runs in the workspace"},
            ],
        },
        {
            "id": "release",
            "title": "Release",
            "prompt": "Tidy up.",
            "checks": [{"type": "git", "clean": True, "message": "Nothing uncommitted"}],
        },
    ]
    workspace = _set_up(tmp_path, steps)
    write(workspace, {"README.md": "hello\n"})
    git(workspace, "-c", "init.defaultBranch=main", "init", "-q")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "start")

    async def script(client: Client) -> dict[str, Any]:
        record: dict[str, Any] = {}
        run = (await _call(client, "workflow_start", {"workflowId": FLOW, "goal": "Build with evidence"}))[
            "runId"
        ]
        record["run"] = run
        record["bare"] = await _call(
            client, "workflow_continue", {"runId": run, "stepId": "build", "output": "Done!"}
        )
        write(workspace, {"docs/adr/0001.md": "# Decision\nBuild it.\n", "built.txt": "ok\n"})
        record["built"] = await _call(
            client, "workflow_continue", {"runId": run, "stepId": "build", "output": "Built."}
        )
        record["dirty"] = await _call(
            client, "workflow_continue", {"runId": run, "stepId": "release", "output": "Ready."}
        )
        git(workspace, "add", "-A")
        git(workspace, "commit", "-q", "-m", "build")
        record["clean"] = await _call(
            client, "workflow_continue", {"runId": run, "stepId": "release", "output": "Ready."}
        )
        return record

    record = _session(tmp_path, script, "--allow-commands", "--command", TEST_COMMAND)
    bare = record["bare"]
    assert bare["accepted"] is False and bare["step"]["id"] == "build"
    assert [(c["check"], c["passed"]) for c in bare["checks"]] == [
        ("file", False),
        ("git", False),
        ("command", False),
        ("command", True),
    ]
    assert any("The tests pass" in i and "1 test failed: no built.txt" in i for i in bare["issues"])
    assert bare["checks"][3]["output"].strip() == str(workspace)
    assert record["built"]["accepted"] is True and record["built"]["step"]["id"] == "release"
    assert [c["passed"] for c in record["built"]["checks"]] == [True, True, True, True]
    assert record["dirty"]["accepted"] is False and "Nothing uncommitted" in record["dirty"]["issues"][0]
    assert record["clean"]["accepted"] is True and record["clean"]["status"] == "completed"

    shown = _cli(tmp_path, "show", record["run"], "--format", "json")
    assert shown.returncode == 0, shown.stderr
    checks = [e for e in json.loads(shown.stdout)["events"] if e["type"] == "check"]
    assert len(checks) == 10
    named = checks[6]  # the second attempt's `test` command
    assert named["passed"] is True and named["exitCode"] == 0 and named["argv"][:2] == ["sh", "-c"]
    assert isinstance(named["durationMs"], int)
    text = _cli(tmp_path, "show", record["run"]).stdout
    assert "FAIL command: The tests pass" in text and "| 1 test failed: no built.txt" in text
    assert "PASS git: Nothing uncommitted" in text
    assert "FAIL file: The ADR is written" in _cli(tmp_path, "show", record["run"], "--format", "md").stdout


def test_a_command_past_its_timeout_is_killed_with_every_process_it_started(tmp_path: Path) -> None:
    steps = [
        {
            "id": "wait",
            "title": "Wait",
            "prompt": "Wait.",
            "checks": [
                {
                    "type": "command",
                    "run": ["sh", "-c", "sleep 300 & echo $! > child.pid; wait"],
                    "timeoutSeconds": 1,
                    "message": "It finishes",
                }
            ],
        }
    ]
    workspace = _set_up(tmp_path, steps)

    async def script(client: Client) -> dict[str, Any]:
        run = (await _call(client, "workflow_start", {"workflowId": FLOW, "goal": "Time out"}))["runId"]
        return await _call(client, "workflow_continue", {"runId": run, "stepId": "wait", "output": "Waited."})

    answer = _session(tmp_path, script, "--allow-commands")
    assert answer["accepted"] is False
    (check,) = answer["checks"]
    assert check["timedOut"] is True and "past its time limit of 1 s" in check["why"]
    _assert_gone(int((workspace / "child.pid").read_text()))


def test_a_file_check_never_follows_a_link_out_of_the_workspace(tmp_path: Path) -> None:
    steps = [
        {
            "id": "doc",
            "title": "Doc",
            "prompt": "Write it.",
            "checks": [{"type": "file", "path": "notes.md", "message": "Notes exist"}],
        }
    ]
    workspace = _set_up(tmp_path, steps)
    (tmp_path / "secret.md").write_text("outside")
    os.symlink(tmp_path / "secret.md", workspace / "notes.md")

    async def script(client: Client) -> dict[str, Any]:
        run = (await _call(client, "workflow_start", {"workflowId": FLOW, "goal": "Escape"}))["runId"]
        return await _call(
            client, "workflow_continue", {"runId": run, "stepId": "doc", "output": "Wrote it."}
        )

    answer = _session(tmp_path, script)
    assert answer["accepted"] is False
    assert "is a link that points out of the workspace" in answer["checks"][0]["why"]


def test_commands_are_refused_without_allow_commands_and_the_answer_says_how_to_allow_them(
    tmp_path: Path,
) -> None:
    steps = [
        {
            "id": "build",
            "title": "Build",
            "prompt": "Build.",
            "checks": [{"type": "command", "run": ["touch", "ran.txt"], "message": "Built"}],
        }
    ]
    workspace = _set_up(tmp_path, steps)

    async def script(client: Client) -> dict[str, Any]:
        run = (await _call(client, "workflow_start", {"workflowId": FLOW, "goal": "No commands"}))["runId"]
        return await _call(client, "workflow_continue", {"runId": run, "stepId": "build", "output": "Built."})

    answer = _session(tmp_path, script)
    assert answer["accepted"] is False and "--allow-commands" in answer["issues"][0]
    assert not (workspace / "ran.txt").exists()


def test_sigterm_while_a_check_runs_stops_the_server_and_the_check(tmp_path: Path) -> None:
    steps = [
        {
            "id": "slow",
            "title": "Slow",
            "prompt": "Wait.",
            "checks": [
                {"type": "command", "run": ["sh", "-c", "echo $$ > check.pid; sleep 300"], "message": "Slow"}
            ],
        }
    ]
    _set_up(tmp_path, steps)
    flows = str(tmp_path / "flows")
    with Server("--no-bundled", "--workflows", flows, "--allow-commands") as server:
        server.initialize()
        run = server.result("workflow_start", {"workflowId": FLOW, "goal": "Stop"})["runId"]
        arguments = {"runId": run, "stepId": "slow", "output": "Waiting."}
        server.send({"jsonrpc": "2.0", "id": 3, "method": "workflow_continue", "params": arguments})
        pidfile = server.folder / "check.pid"  # the server's working folder is the workspace
        deadline = time.monotonic() + 20
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        check_pid = int(pidfile.read_text())
        server.signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0
        _assert_gone(check_pid)


def _assert_gone(pid: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z":
            return  # a zombie: dead, waiting for its parent (init) to reap it
        time.sleep(0.05)
    raise AssertionError(f"process {pid} is still running")


# -- approvals ------------------------------------------------------------------------------------

APPROVAL_STEPS = [
    {
        "id": "plan",
        "title": "Plan",
        "prompt": "Write the plan.",
        "requireConfirmation": True,
        "validationCriteria": [{"type": "contains", "value": "Plan:", "message": "Start with 'Plan:'"}],
    },
    {"id": "build", "title": "Build", "prompt": "Build it."},
]


def _answering(action: str, comment: str | None, asked: list[str]) -> Elicit:
    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action=action, content={"comment": comment} if comment else None)  # type: ignore[arg-type]

    return elicit


def _submit_plan(
    client_output: str = "Plan: build it behind a flag.",
) -> Callable[[Client], Awaitable[dict[str, Any]]]:
    async def script(client: Client) -> dict[str, Any]:
        started = await _call(client, "workflow_start", {"workflowId": FLOW, "goal": "Ask a person"})
        run = started["runId"]
        answer = await _call(
            client, "workflow_continue", {"runId": run, "stepId": "plan", "output": client_output}
        )
        return {"run": run, "answer": answer}

    return script


def _events(tmp: Path, run: str) -> list[dict[str, Any]]:
    shown = _cli(tmp, "show", run, "--format", "json")
    assert shown.returncode == 0, shown.stderr
    return list(json.loads(shown.stdout)["events"])


def _approved_through_elicitation(tmp: Path, mode: str) -> None:
    _set_up(tmp, APPROVAL_STEPS)
    asked: list[str] = []
    record = _session(tmp, _submit_plan(), mode=mode, elicit=_answering("accept", "Good plan", asked))
    answer = record["answer"]
    assert answer["accepted"] is True and answer["step"]["id"] == "build", answer
    assert answer["approved"]["comment"] == "Good plan"
    (question,) = asked
    assert record["run"] in question and "`plan`" in question and "Plan: build it behind a flag." in question
    events = _events(tmp, record["run"])
    assert [e["type"] for e in events][-4:] == ["awaiting_approval", "approval_asked", "approved", "accepted"]
    asked_event, approved_event = events[-3], events[-2]
    assert approved_event["question"] == asked_event["seq"]  # the answer names the question it answers


def test_a_client_that_answers_elicitation_approves_on_the_2025_protocol(tmp_path: Path) -> None:
    _approved_through_elicitation(tmp_path, "legacy")


def test_a_client_that_answers_elicitation_approves_on_the_2026_07_28_protocol(tmp_path: Path) -> None:
    _approved_through_elicitation(tmp_path, "auto")


def test_a_person_who_declines_through_the_client_sends_the_step_back(tmp_path: Path) -> None:
    _set_up(tmp_path, APPROVAL_STEPS)
    asked: list[str] = []
    record = _session(tmp_path, _submit_plan(), mode="auto", elicit=_answering("decline", "Add tests", asked))
    answer = record["answer"]
    assert answer["accepted"] is False and answer["status"] == "active" and answer["step"]["id"] == "plan"
    assert answer["issues"][0].endswith("declined this step: Add tests")
    assert [e["type"] for e in _events(tmp_path, record["run"])][-1] == "declined"


def _cancelled_then_approved_with_the_cli(tmp: Path, mode: str) -> None:
    """A headless client cancels the question at once: no decision; a person approves later."""
    _set_up(tmp, APPROVAL_STEPS)
    asked: list[str] = []

    async def script(client: Client) -> dict[str, Any]:
        record = await _submit_plan()(client)
        run = record["run"]
        record["events"] = await anyio.to_thread.run_sync(lambda: _events(tmp, run))
        record["cli"] = await anyio.to_thread.run_sync(lambda: _cli(tmp, "approve", run, "--as", "carol"))
        record["after"] = await _call(client, "workflow_continue", {"runId": run, "stepId": "plan"})
        return record

    record = _session(tmp, script, mode=mode, elicit=_answering("cancel", None, asked))
    run, answer = record["run"], record["answer"]
    assert len(asked) == 1  # the client was asked, and cancelled
    assert answer["accepted"] is False and answer["status"] == "awaiting_approval", answer
    assert "declined" not in answer and "issues" not in answer
    approval = answer["approval"]
    assert approval["clientAnswer"] == "cancel"
    assert approval["message"].startswith("Your client closed the approval question without an answer")
    assert (
        "nobody declined" in approval["message"] and f"`handrail runs approve {run}`" in approval["message"]
    )
    types_then = [e["type"] for e in record["events"]]
    assert types_then[-3:] == ["awaiting_approval", "approval_asked", "approval_unanswered"]
    assert "declined" not in types_then
    unanswered = record["events"][-1]
    assert unanswered["answer"] == "cancel" and unanswered["question"] == record["events"][-2]["seq"]
    assert record["cli"].returncode == 0, record["cli"].stderr  # the run still waited for a person
    after = record["after"]
    assert after["accepted"] is True and after["approved"]["person"] == "carol"


def test_a_client_that_cancels_the_question_declines_nothing_on_the_2025_protocol(tmp_path: Path) -> None:
    _cancelled_then_approved_with_the_cli(tmp_path, "legacy")


def test_a_client_that_cancels_the_question_declines_nothing_on_the_2026_07_28_protocol(
    tmp_path: Path,
) -> None:
    _cancelled_then_approved_with_the_cli(tmp_path, "auto")


def test_a_question_the_client_fails_to_answer_is_no_decision_either(tmp_path: Path) -> None:
    _set_up(tmp_path, APPROVAL_STEPS)

    async def failing(context: Any, params: types.ElicitRequestParams) -> types.ErrorData:
        return types.ErrorData(code=-32603, message="no person at this terminal")

    record = _session(tmp_path, _submit_plan(), mode="legacy", elicit=failing)  # type: ignore[arg-type]
    answer = record["answer"]
    assert answer["status"] == "awaiting_approval" and answer["approval"]["clientAnswer"] == "none"
    assert answer["approval"]["message"].startswith("Your client gave no answer")
    events = _events(tmp_path, record["run"])
    assert [e["type"] for e in events][-2:] == ["approval_asked", "approval_unanswered"]
    assert events[-1]["answer"] == "none"


def _approved_with_the_cli(tmp: Path, mode: str) -> None:
    _set_up(tmp, APPROVAL_STEPS)

    async def script(client: Client) -> dict[str, Any]:
        record = await _submit_plan()(client)
        run = record["run"]
        record["waiting"] = await _call(client, "workflow_continue", {"runId": run, "stepId": "plan"})
        approved = await anyio.to_thread.run_sync(
            lambda: _cli(tmp, "approve", run, "--comment", "Ship it", "--as", "carol")
        )
        record["cli"] = approved
        record["after"] = await _call(client, "workflow_continue", {"runId": run, "stepId": "plan"})
        return record

    record = _session(tmp, script, mode=mode)
    answer = record["answer"]
    assert answer["accepted"] is False and answer["status"] == "awaiting_approval"
    assert f"handrail runs approve {record['run']}" in answer["approval"]["message"]
    assert record["waiting"]["status"] == "awaiting_approval"
    assert record["cli"].returncode == 0, record["cli"].stderr
    assert "approved by carol" in record["cli"].stdout
    after = record["after"]
    assert after["accepted"] is True and after["step"]["id"] == "build"
    assert after["approved"] == {"person": "carol", "comment": "Ship it"}


def test_a_client_without_elicitation_waits_for_handrail_runs_approve_on_the_2025_protocol(
    tmp_path: Path,
) -> None:
    _approved_with_the_cli(tmp_path, "legacy")


def test_a_client_without_elicitation_waits_for_handrail_runs_approve_on_the_2026_07_28_protocol(
    tmp_path: Path,
) -> None:
    _approved_with_the_cli(tmp_path, "auto")


def test_handrail_runs_decline_sends_the_step_back_and_approving_a_run_not_waiting_fails(
    tmp_path: Path,
) -> None:
    _set_up(tmp_path, APPROVAL_STEPS)
    record = _session(tmp_path, _submit_plan())
    declined = _cli(tmp_path, "decline", record["run"], "--comment", "Too vague")
    assert declined.returncode == 0 and "declined by" in declined.stdout
    again = _cli(tmp_path, "approve", record["run"])
    assert (
        again.returncode == 1 and "no submission of its current step is waiting for a person" in again.stderr
    )
    assert _events(tmp_path, record["run"])[-1]["comment"] == "Too vague"


# -- over HTTP (stateless): checks on the worker pool, approvals by retry or by the CLI ------------


def _modern_call(arguments: dict[str, Any], **params: Any) -> dict[str, Any]:
    meta = envelope(**{CLIENT_CAPABILITIES_KEY: {"elicitation": {}}})
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "workflow_continue", "arguments": arguments, **params, "_meta": meta},
    }


def test_over_http_checks_run_and_a_2026_client_approves_on_its_retry_while_a_2025_one_waits_for_the_cli(
    tmp_path: Path,
) -> None:
    steps = [
        {
            "id": "plan",
            "title": "Plan",
            "prompt": "Write the plan.",
            "requireConfirmation": True,
            "checks": [{"type": "command", "run": ["sh", "-c", "echo checked"], "message": "It runs"}],
        },
        {"id": "build", "title": "Build", "prompt": "Build it."},
    ]
    workspace = _set_up(tmp_path, steps)
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    common = (
        "--no-bundled",
        "--workflows",
        str(tmp_path / "flows"),
        "--database",
        database,
        "--allow-commands",
    )
    with HttpServer(*common) as http:
        first = http.rpc(
            "workflow_start", {"workflowId": FLOW, "goal": "Modern", "workspace": str(workspace)}
        )
        run = first["result"]["runId"]
        arguments = {"runId": run, "stepId": "plan", "output": "Plan: one."}
        message = _modern_call(arguments)
        asked = http.post(message, modern_headers(message)).json()["result"]
        assert asked["resultType"] == "input_required", asked
        request = asked["inputRequests"]["approval"]
        assert request["method"] == "elicitation/create" and run in request["params"]["message"]
        retry = _modern_call(
            arguments,
            inputResponses={"approval": {"action": "accept", "content": {"comment": "Fine"}}},
            requestState=asked["requestState"],
        )
        done = http.post(retry, modern_headers(retry)).json()["result"]
        assert done["resultType"] == "complete" and done["structuredContent"]["accepted"] is True
        assert done["structuredContent"]["step"]["id"] == "build"

        second = http.rpc(
            "workflow_start", {"workflowId": FLOW, "goal": "Classic", "workspace": str(workspace)}
        )
        other = second["result"]["runId"]
        waiting = http.rpc("workflow_continue", {"runId": other, "stepId": "plan", "output": "Plan: two."})
        assert waiting["result"]["status"] == "awaiting_approval"
        approved = subprocess.run(
            [
                sys.executable,
                "-m",
                "handrail",
                "runs",
                "approve",
                other,
                "--database",
                database,
                "--as",
                "dana",
            ],
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert approved.returncode == 0, approved.stderr
        after = http.rpc("workflow_continue", {"runId": other, "stepId": "plan"})["result"]
        assert after["accepted"] is True and after["approved"] == {"person": "dana"}
    events = _cli(tmp_path, "show", run, "--database", database, "--format", "json")
    kinds = [e["type"] for e in json.loads(events.stdout)["events"]]
    assert kinds == ["started", "check", "awaiting_approval", "approval_asked", "approved", "accepted"]
