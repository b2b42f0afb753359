"""URL-mode approval questions through real clients: a spawned `handrail start` played as a
2025-11-25 client over stdio, and a spawned `handrail serve` played as a 2026-07-28 client
over HTTP. A client that takes URL mode is sent to the run's dashboard page; its `accept`
says only that the person opened it; the decision made there (or with `handrail runs
approve`) is what lets the run go on."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.http import CLIENT_CAPABILITIES_KEY, HttpServer, envelope, modern_headers
from tests.helpers.server import Server, clean_env

pytestmark = pytest.mark.slow

FLOW = "confirmed"
CONFIRMED = {
    "id": FLOW,
    "name": "Confirmed",
    "description": "One step a person confirms.",
    "version": "1.0.0",
    "steps": [
        {"id": "ship", "title": "Ship", "prompt": "Ship it.", "requireConfirmation": True},
        {"id": "tell", "title": "Tell", "prompt": "Tell everyone."},
    ],
}
PUBLIC = "https://handrail.example.test/team/"
BOTH_MODES = {"elicitation": {"form": {}, "url": {}}}


def _flows(tmp: Path) -> str:
    flows = tmp / "flows"
    flows.mkdir(exist_ok=True)
    (flows / f"{FLOW}.json").write_text(json.dumps(CONFIRMED))
    return str(flows)


def _handrail(folder: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "handrail", *args],
        env=clean_env(folder),
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _event_types(folder: Path, run: str) -> list[str]:
    shown = json.loads(_handrail(folder, "runs", "show", run, "--format", "json"))
    return [e["type"] for e in shown["events"]]


def _question(server: Server, run: str) -> tuple[int, dict[str, Any]]:
    """Submits the step; the id of that call and the elicitation/create it waits on."""
    rid = server.new_id()
    arguments = {"runId": run, "stepId": "ship", "output": "Ready to ship."}
    server.send(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": "workflow_continue", "arguments": arguments},
        }
    )
    request: dict[str, Any] = server.recv()
    assert request.get("method") == "elicitation/create", request
    return rid, request


def test_a_client_that_takes_url_mode_is_sent_to_the_runs_page_and_its_accept_approves_nothing(
    tmp_path: Path,
) -> None:
    with Server("--no-bundled", "--workflows", _flows(tmp_path), "--public-url", PUBLIC) as server:
        server.initialize(capabilities=BOTH_MODES)
        run = server.result("workflow_start", {"workflowId": FLOW, "goal": "Ship"})["runId"]
        rid, request = _question(server, run)
        params = request["params"]
        assert params["mode"] == "url" and "requestedSchema" not in params, params
        assert params["url"] == f"https://handrail.example.test/team/runs/{run}"
        assert "approve or decline it there" in params["message"]
        elicitation = params["elicitationId"]
        server.send({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept"}})
        answer = server.response(rid)["result"]["structuredContent"]
        assert answer["accepted"] is False and answer["status"] == "awaiting_approval", answer
        assert answer["approval"]["page"] == params["url"]
        types = _event_types(server.folder, run)
        assert "approval_asked" in types and "approved" not in types
        # the person decides (here with the CLI, acting as themself); the client is told
        # on its next call, and that call sees the decision
        _handrail(server.folder, "runs", "approve", run, "--as", "carol")
        after = server.call("workflow_continue", {"runId": run, "stepId": "ship"})
        assert after["structuredContent"]["accepted"] is True, after
        assert after["structuredContent"]["approved"] == {"person": "carol"}
        assert after["structuredContent"]["step"]["id"] == "tell"
        complete = [n for n in server.notifications if n["method"] == "notifications/elicitation/complete"]
        assert complete == [
            {
                "jsonrpc": "2.0",
                "method": "notifications/elicitation/complete",
                "params": {"elicitationId": elicitation},
            }
        ]


def test_a_client_without_url_mode_or_a_server_without_a_page_still_asks_with_the_form(
    tmp_path: Path,
) -> None:
    flows = _flows(tmp_path)
    for capabilities, extra in (
        ({"elicitation": {}}, ("--public-url", PUBLIC)),  # an empty object: form mode alone
        ({"elicitation": {"form": {}}}, ("--public-url", PUBLIC)),
        (BOTH_MODES, ()),  # no dashboard address known over stdio
    ):
        with Server("--no-bundled", "--workflows", flows, *extra) as server:
            server.initialize(capabilities=capabilities)
            run = server.result("workflow_start", {"workflowId": FLOW, "goal": "Ship"})["runId"]
            rid, request = _question(server, run)
            assert request["params"]["mode"] == "form", (capabilities, request)
            assert "url" not in request["params"]
            server.send({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept"}})
            answer = server.response(rid)["result"]["structuredContent"]
            assert answer["accepted"] is True and answer["step"]["id"] == "tell", (capabilities, answer)


def test_over_http_the_question_is_the_runs_page_and_only_the_dashboard_decision_lets_the_run_go_on(
    tmp_path: Path,
) -> None:
    alice = "alice-token-0123456789abcdef"
    (tmp_path / "tokens").write_text(f"alice {alice}\n", "utf-8")
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    args = ("--no-bundled", "--workflows", _flows(tmp_path), "--tokens", str(tmp_path / "tokens"))
    with HttpServer(*args, "--database", database) as http:
        bearer = {"Authorization": f"Bearer {alice}"}
        started = http.rpc("workflow_start", {"workflowId": FLOW, "goal": "Ship"}, headers=bearer)
        run = started["result"]["runId"]
        meta = envelope(**{CLIENT_CAPABILITIES_KEY: {"elicitation": {"url": {}}}})

        def call(arguments: dict[str, Any], **params: Any) -> dict[str, Any]:
            message = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "workflow_continue", "arguments": arguments, **params, "_meta": meta},
            }
            reply = http.post(message, modern_headers(message) | bearer)
            result: dict[str, Any] = reply.json()["result"]
            return result

        submit = {"runId": run, "stepId": "ship", "output": "Ready to ship."}
        asked = call(submit)
        assert asked["resultType"] == "input_required", asked
        question = asked["inputRequests"]["approval"]
        assert question["method"] == "elicitation/create"
        page = f"http://127.0.0.1:{http.port}/runs/{run}"
        assert question["params"]["mode"] == "url" and question["params"]["url"] == page, question
        # the client's accept (the person opened the page) is no approval, nor is a form's
        # answer sent back for that question by a client that now claims form mode alone
        opened = call(
            submit, inputResponses={"approval": {"action": "accept"}}, requestState=asked["requestState"]
        )
        assert opened["resultType"] == "complete" and opened["isError"] is False, opened
        assert opened["structuredContent"]["status"] == "awaiting_approval"
        assert opened["structuredContent"]["accepted"] is False
        meta[CLIENT_CAPABILITIES_KEY] = {"elicitation": {}}
        formed = call(
            {"runId": run, "stepId": "ship"},
            inputResponses={"approval": {"action": "accept", "content": {"comment": "ok"}}},
            requestState=asked["requestState"],
        )
        assert formed["structuredContent"]["status"] == "awaiting_approval", formed
        status = http.rpc("workflow_resume", {"runId": run}, headers=bearer)["result"]["status"]
        assert status == "awaiting_approval"
        # the person signs in to the page and approves there
        with httpx.Client(base_url=http.base, timeout=15) as person:
            origin = {"Origin": http.base}
            signin = person.post("/signin", data={"token": alice}, headers=origin, follow_redirects=False)
            assert signin.status_code == 303, signin.text
            shown = person.get(f"/runs/{run}")
            assert shown.status_code == 200 and "Ready to ship." in shown.text
            csrf = re.search(r'name="csrf" value="([^"]+)"', shown.text)
            assert csrf is not None, shown.text
            approved = person.post(
                f"/runs/{run}/approve", data={"csrf": csrf.group(1)}, headers=origin, follow_redirects=False
            )
            assert approved.status_code == 303, approved.text
        after = call({"runId": run, "stepId": "ship"})
        answer = after["structuredContent"]
        assert answer["accepted"] is True and answer["approved"] == {"person": "alice"}, answer
        assert answer["step"]["id"] == "tell"


def test_a_client_with_url_mode_alone_is_asked_nothing_where_the_server_knows_no_page(
    tmp_path: Path,
) -> None:
    with Server("--no-bundled", "--workflows", _flows(tmp_path)) as server:
        server.initialize(capabilities={"elicitation": {"url": {}}})
        run = server.result("workflow_start", {"workflowId": FLOW, "goal": "Ship"})["runId"]
        waiting = server.call("workflow_continue", {"runId": run, "stepId": "ship", "output": "Ready."})
        answer = waiting["structuredContent"]
        assert answer["status"] == "awaiting_approval" and "page" not in answer["approval"], answer
        assert f"handrail runs approve {run}" in answer["approval"]["message"]
        assert "approval_asked" not in _event_types(server.folder, run)


def test_a_public_url_that_is_not_an_http_address_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "start", "--no-bundled", "--public-url", "javascript:alert(1)"],
        env=clean_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done
    assert "--public-url: 'javascript:alert(1)' is not an http(s) URL" in done.stderr
