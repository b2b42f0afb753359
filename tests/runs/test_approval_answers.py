"""A client's approval answer counts only for a question the server put for the approval
the run waits on, once: driven through raw JSON lines over a spawned `handrail start`
(2026-07-28 `inputResponses` / `requestState`, and 2025 `elicitation/create`) and over
`handrail serve`. Each refused answer leaves the run waiting and says why."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.http import CLIENT_CAPABILITIES_KEY, HttpServer, envelope, modern_headers
from tests.helpers.server import Server, clean_env

pytestmark = pytest.mark.slow

FLOW = "gated"
GATED = {
    "id": FLOW,
    "name": "Gated",
    "description": "Steps a person approves.",
    "version": "1.0.0",
    "steps": [
        {"id": "plan", "title": "Plan", "prompt": "Write the plan.", "requireConfirmation": True},
        {
            "id": "each",
            "type": "loop",
            "title": "Each part",
            "loop": {"type": "forEach", "items": "parts", "itemVar": "part", "maxIterations": 10},
            "body": [
                {
                    "id": "build",
                    "title": "Build a part",
                    "prompt": "Build {{part}}.",
                    "requireConfirmation": True,
                }
            ],
        },
        {"id": "ship", "title": "Ship", "prompt": "Ship it."},
    ],
}
ACCEPT = {"approval": {"action": "accept"}}


def _server(tmp: Path, *extra: str) -> Server:
    flows = tmp / "flows"
    flows.mkdir(exist_ok=True)
    (flows / f"{FLOW}.json").write_text(json.dumps(GATED))
    server = Server("--no-bundled", "--workflows", str(flows), *extra)
    server.initialize()
    return server


def _start(server: Server, parts: list[str] | None = None) -> str:
    started = server.result(
        "workflow_start", {"workflowId": FLOW, "goal": "Ship it", "context": {"parts": parts or ["a", "b"]}}
    )
    run: str = started["runId"]
    return run


def _modern(server: Server, arguments: dict[str, Any], **params: Any) -> dict[str, Any]:
    """workflow_continue from a 2026-07-28 client that declares elicitation."""
    meta = envelope(**{CLIENT_CAPABILITIES_KEY: {"elicitation": {}}})
    result: dict[str, Any] = server.result(
        "tools/call", {"name": "workflow_continue", "arguments": arguments, **params, "_meta": meta}
    )
    return result


def _asked(server: Server, arguments: dict[str, Any]) -> str:
    """The requestState of the question this call is answered with."""
    asked = _modern(server, arguments)
    assert asked["resultType"] == "input_required", asked
    state: str = asked["requestState"]
    return state


def _refusal(result: dict[str, Any]) -> str:
    assert result["isError"] is True, result
    assert result["resultType"] == "complete"
    data = result["structuredContent"]["data"]
    assert data["status"] == "awaiting_approval", data
    text: str = result["content"][0]["text"]
    assert "not used" in text and "still waits for a person to approve" in text, text
    return text


def _events(server: Server, run: str) -> list[dict[str, Any]]:
    shown = subprocess.run(
        [sys.executable, "-m", "handrail", "runs", "show", run, "--format", "json"],
        env=clean_env(server.folder),
        cwd=server.folder,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    return list(json.loads(shown.stdout)["events"])


def _status(server: Server, run: str) -> str:
    status: str = server.result("workflow_resume", {"runId": run})["status"]
    return status


def test_an_approval_sent_with_the_first_call_before_any_question_approves_nothing(tmp_path: Path) -> None:
    with _server(tmp_path) as server:
        run = _start(server)
        plan = {"runId": run, "stepId": "plan", "output": "Plan: one."}
        early = _modern(server, plan, inputResponses=ACCEPT)
        assert "carries no requestState" in _refusal(early)
        assert _status(server, run) == "awaiting_approval"
        assert "approved" not in [e["type"] for e in _events(server, run)]
        # asked properly, the same answer counts
        state = _asked(server, {"runId": run, "stepId": "plan"})
        done = _modern(server, {"runId": run, "stepId": "plan"}, inputResponses=ACCEPT, requestState=state)
        assert done["structuredContent"]["accepted"] is True, done
        assert done["structuredContent"]["step"]["id"] == "build"


def test_a_forged_request_state_approves_nothing_and_says_why(tmp_path: Path) -> None:
    with _server(tmp_path) as server:
        run = _start(server)
        arguments = {"runId": run, "stepId": "plan"}
        state = _asked(server, {**arguments, "output": "Plan: one."})
        guessed = _modern(server, arguments, inputResponses=ACCEPT, requestState=f"{run}:plan")
        assert "not one handrail gave" in _refusal(guessed)  # the shape the server once gave
        _, seq, nonce = state.split(":")
        forged = {
            f"{run}:1:{nonce}": "asked no such question",  # the seq of the `started` event
            f"{run}:{seq}:{nonce[:-2]}xx": "does not match the question",
            f"{run}:{int(seq) + 5}:{nonce}": "asked no such question",
        }
        for request_state, why in forged.items():
            refused = _modern(server, arguments, inputResponses=ACCEPT, requestState=request_state)
            assert why in _refusal(refused), request_state
        assert _status(server, run) == "awaiting_approval"
        assert "approved" not in [e["type"] for e in _events(server, run)]
        done = _modern(server, arguments, inputResponses=ACCEPT, requestState=state)
        assert done["structuredContent"]["accepted"] is True


def test_an_answer_counts_once_for_its_own_run_and_iteration_and_only_for_the_latest_question(
    tmp_path: Path,
) -> None:
    with _server(tmp_path) as server:
        run = _start(server)
        plan = {"runId": run, "stepId": "plan"}
        first = _asked(server, {**plan, "output": "Plan: one."})
        latest = _asked(server, plan)  # asked again: the first question is replaced
        replaced = _modern(server, plan, inputResponses=ACCEPT, requestState=first)
        assert "a later question replaced it" in _refusal(replaced)
        assert _modern(server, plan, inputResponses=ACCEPT, requestState=latest)["structuredContent"][
            "accepted"
        ]
        # the loop's first time round, approved by its own question
        build = {"runId": run, "stepId": "build"}
        round_one = _asked(server, {**build, "output": "Built a."})
        done = _modern(server, build, inputResponses=ACCEPT, requestState=round_one)
        assert done["structuredContent"]["loop"]["iteration"] == 2
        # the second time round: the first round's answer, replayed, approves nothing
        replayed = _modern(
            server, {**build, "output": "Built b."}, inputResponses=ACCEPT, requestState=round_one
        )
        assert "answered already" in _refusal(replayed)
        round_two = _asked(server, build)
        # nor does it approve another run's step
        other = _start(server)
        _asked(server, {"runId": other, "stepId": "plan", "output": "Plan: other."})
        crossed = _modern(
            server, {"runId": other, "stepId": "plan"}, inputResponses=ACCEPT, requestState=round_two
        )
        assert "for another run" in _refusal(crossed)
        assert _status(server, run) == "awaiting_approval" and _status(server, other) == "awaiting_approval"
        approvals = [e for e in _events(server, run) if e["type"] == "approved"]
        assert len(approvals) == 2  # the plan and the first round, each once


def test_a_call_without_output_on_the_loops_next_time_round_is_not_answered_with_the_last_approval(
    tmp_path: Path,
) -> None:
    with _server(tmp_path) as server:
        run = _start(server)
        for step, output in (("plan", "Plan: one."), ("build", "Built a.")):
            arguments = {"runId": run, "stepId": step}
            state = _asked(server, {**arguments, "output": output})
            assert _modern(server, arguments, inputResponses=ACCEPT, requestState=state)["structuredContent"][
                "accepted"
            ]
        again = server.call("workflow_continue", {"runId": run, "stepId": "build"})
        assert again["isError"] is True, again
        data = again["structuredContent"]["data"]
        assert "next time round its loop" in data["details"] and "output is required" in data["details"]
        assert "person" in data["earlierApproval"]


def test_an_answer_to_elicitation_counts_only_under_the_id_of_the_request_it_answers(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    flows.mkdir()
    (flows / f"{FLOW}.json").write_text(json.dumps(GATED))
    with Server("--no-bundled", "--workflows", str(flows)) as server:
        server.initialize(capabilities={"elicitation": {}})
        run = _start(server)
        rid = server.new_id()
        arguments = {"runId": run, "stepId": "plan", "output": "Plan: one."}
        server.send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "tools/call",
                "params": {"name": "workflow_continue", "arguments": arguments},
            }
        )
        request = server.recv()
        assert request["method"] == "elicitation/create", request
        # answers under ids the client made up, written before the real one
        server.send(
            *({"jsonrpc": "2.0", "id": f"handrail-{n}", "result": {"action": "accept"}} for n in range(1, 4))
        )
        server.send({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "decline"}})
        answer = server.response(rid)["result"]["structuredContent"]
        assert answer["accepted"] is False and "declined" in answer, answer
        assert "approved" not in [e["type"] for e in _events(server, run)]


# -- what a run says: run tools only, what happened, where a person approves -------------------------


def test_a_call_with_the_run_id_after_a_person_approved_the_last_step_says_so(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    flows.mkdir()
    one_step = {**GATED, "steps": [GATED["steps"][0]]}
    (flows / f"{FLOW}.json").write_text(json.dumps(one_step))
    with Server("--no-bundled", "--workflows", str(flows)) as server:
        server.initialize()
        run = _start(server)
        waiting = server.call("workflow_continue", {"runId": run, "stepId": "plan", "output": "Plan: one."})
        assert waiting["structuredContent"]["status"] == "awaiting_approval"
        approved = subprocess.run(
            [sys.executable, "-m", "handrail", "runs", "approve", run, "--as", "carol"],
            env=clean_env(server.folder),
            cwd=server.folder,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert approved.returncode == 0, approved.stderr
        after = server.call("workflow_continue", {"runId": run})
        assert after["isError"] is False, after
        answer = after["structuredContent"]
        assert answer["accepted"] is True and answer["status"] == "completed"
        assert answer["approved"] == {"person": "carol"}
        assert "carol approved step `plan`" in answer["message"] and "completed" in answer["message"]


def test_a_call_with_only_context_says_it_changed_the_context_and_submitted_no_step(tmp_path: Path) -> None:
    with _server(tmp_path) as server:
        run = _start(server)
        answer = server.call("workflow_continue", {"runId": run, "context": {"owner": "ana", "parts": None}})
        said = answer["structuredContent"]
        assert said["accepted"] is False and "issues" not in said
        message = said["message"]
        assert "set `owner`" in message and "removed `parts`" in message
        assert "no step was submitted" in message and "stepId `plan`" in message


BLOCKED = {
    "id": "blocked",
    "name": "Blocked",
    "description": "Waits on context.",
    "version": "1.0.0",
    "steps": [
        {"id": "do-it", "title": "Do it", "prompt": "Do it."},
        {
            "id": "deploy",
            "title": "Deploy",
            "prompt": "Deploy.",
            "runCondition": {"var": "go", "equals": True},
        },
    ],
}


def test_a_blocked_run_tells_the_agent_to_send_context_with_workflow_continue(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    flows.mkdir()
    (flows / "blocked.json").write_text(json.dumps(BLOCKED))
    for extra in ((), ("--runs-only",)):
        with Server("--no-bundled", "--workflows", str(flows), *extra) as server:
            server.initialize()
            run = server.call("workflow_start", {"workflowId": "blocked", "goal": "Deploy"})[
                "structuredContent"
            ]
            done = server.call(
                "workflow_continue", {"runId": run["runId"], "stepId": "do-it", "output": "Done."}
            )
            prompt = done["structuredContent"]["guidance"]["prompt"]
            assert "`go`" in prompt and "workflow_continue" in prompt and "only `context`" in prompt
            assert "workflow_next" not in prompt
            early = server.call(
                "workflow_continue", {"runId": run["runId"], "stepId": "deploy", "output": "x"}
            )
            details = early["structuredContent"]["data"]["details"]
            assert "workflow_continue" in details and "workflow_next" not in details


def test_instructions_teach_the_tools_the_server_offers(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    flows.mkdir()
    (flows / "blocked.json").write_text(json.dumps(BLOCKED))
    with Server("--no-bundled", "--workflows", str(flows), "--runs-only") as server:
        text = server.initialize()["instructions"]
        assert "workflow_start" in text and "workflow_continue" in text
        assert "workflow_next" not in text and "workflow_validate" not in text
        discovered = server.result("server/discover", {"_meta": envelope()})["instructions"]
        assert "workflow_start" in discovered and "workflow_next" not in discovered
    with Server("--no-bundled", "--workflows", str(flows)) as server:
        text = server.initialize()["instructions"]
        assert "Unfinished runs" not in text  # nothing open
        assert "workflow_next" in text and "workflow_start" in text and "workflow_continue" in text


def test_a_client_with_roots_is_told_of_open_runs_in_every_workspace_with_their_folders(
    tmp_path: Path,
) -> None:
    flows = tmp_path / "flows"
    flows.mkdir()
    (flows / f"{FLOW}.json").write_text(json.dumps(GATED))
    project = tmp_path / "project"
    project.mkdir()
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    common = ("--no-bundled", "--workflows", str(flows), "--database", database)
    with Server(*common) as first:
        first.initialize()
        started = first.result(
            "workflow_start", {"workflowId": FLOW, "goal": "In the project", "workspace": str(project)}
        )
    run = started["runId"]
    with Server(*common) as plain:
        assert run not in plain.initialize()["instructions"]  # the server's own folder has none
    with Server(*common) as rooted:
        text = rooted.initialize(capabilities={"roots": {}})["instructions"]
        assert f"{run} in {project}" in text and "workflow_resume" in text


def test_over_http_answers_need_the_question_and_the_waiting_message_names_the_dashboard_page(
    tmp_path: Path,
) -> None:
    flows = tmp_path / "flows"
    flows.mkdir()
    (flows / f"{FLOW}.json").write_text(json.dumps(GATED))
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with HttpServer("--no-bundled", "--workflows", str(flows)) as http:
        started = http.rpc(
            "workflow_start",
            {"workflowId": FLOW, "goal": "Over HTTP", "workspace": str(workspace), "context": {"parts": []}},
        )
        run = started["result"]["runId"]
        meta = envelope(**{CLIENT_CAPABILITIES_KEY: {"elicitation": {}}})
        arguments = {"runId": run, "stepId": "plan", "output": "Plan: one."}

        def call(**params: Any) -> dict[str, Any]:
            message = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "workflow_continue", "arguments": arguments, **params, "_meta": meta},
            }
            result: dict[str, Any] = http.post(message, modern_headers(message)).json()["result"]
            return result

        assert "carries no requestState" in _refusal(call(inputResponses=ACCEPT))
        assert "not one handrail gave" in _refusal(call(inputResponses=ACCEPT, requestState=f"{run}:plan"))
        state = call()["requestState"]
        assert call(inputResponses=ACCEPT, requestState=state)["structuredContent"]["accepted"] is True
        # a 2025 client is told where a person approves: the dashboard's page of the run
        other = http.rpc("workflow_start", {"workflowId": FLOW, "goal": "Page", "workspace": str(workspace)})
        other_run = other["result"]["runId"]
        waiting = http.rpc(
            "workflow_continue", {"runId": other_run, "stepId": "plan", "output": "Plan: two."}
        )
        approval = waiting["result"]["approval"]
        page = f"http://127.0.0.1:{http.port}/runs/{other_run}"
        assert approval["page"] == page and page in approval["message"]
        shown = httpx.get(page, timeout=15)
        assert shown.status_code == 200 and other_run in shown.text
