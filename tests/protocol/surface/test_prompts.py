"""MCP prompts: one per workflow, over a real `handrail start` process.

A prompt's name is the workflow's id and its description the workflow's; getting
it gives one user message that tells the model to walk the workflow with
workflow_next (workflowId, completedSteps []) and check each output with
workflow_validate. The results are held to the SDK's types for every protocol
version, the capability is announced in initialize and server/discover, and a
change to the workflow files is announced as notifications/prompts/list_changed.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp_types.methods import parse_server_result

from handrail.compiler import compile_path
from tests.conftest import CORPUS
from tests.helpers.http import MODERN, HttpServer, modern_request
from tests.helpers.server import Server

# served or walked workflows come from the WorkRail corpus
pytestmark = [pytest.mark.corpus, pytest.mark.slow]

LOOPS = CORPUS / "workflows" / "examples" / "loops"
ARGS = ("--no-bundled", "--workflows", str(LOOPS))
BATCH = "simple-batch-example"
KNOWN = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


def loop_workflows() -> dict[str, Any]:
    found = {}
    for path in sorted(LOOPS.glob("*.json")):
        workflow = compile_path(path).workflow
        assert workflow is not None, path
        found[workflow.id] = workflow
    return found


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with Server(*ARGS) as s:
        s.initialize()
        yield s


def test_one_prompt_per_workflow(server: Server) -> None:
    workflows = loop_workflows()
    prompts = server.result("prompts/list")["prompts"]
    assert [p["name"] for p in prompts] == list(workflows)
    for prompt in prompts:
        workflow = workflows[prompt["name"]]
        assert prompt["description"] == workflow.description
        assert prompt["title"] == workflow.name
        assert "arguments" not in prompt or prompt["arguments"] == []


def test_get_tells_the_model_how_to_walk_the_workflow(server: Server) -> None:
    for workflow_id, workflow in loop_workflows().items():
        result = server.result("prompts/get", {"name": workflow_id})
        assert result["description"] == workflow.description
        [message] = result["messages"]
        assert message["role"] == "user" and message["content"]["type"] == "text"
        text = message["content"]["text"]
        start = re.search(r"workflow_next tool with (\{.*?\})\.", text)
        assert start is not None, text
        assert json.loads(start.group(1)) == {"workflowId": workflow_id, "completedSteps": []}
        assert "workflow_validate" in text and f'"{workflow_id}"' in text
        assert workflow.name in text and "isComplete" in text


def test_arguments_may_be_given_and_are_not_needed(server: Server) -> None:
    plain = server.result("prompts/get", {"name": BATCH})
    assert server.result("prompts/get", {"name": BATCH, "arguments": {}}) == plain
    assert server.result("prompts/get", {"name": BATCH, "arguments": {"x": "y"}}) == plain


@pytest.mark.parametrize(
    ("params", "detail"),
    [
        ({}, "name is required"),
        ({"name": 42}, "name must be a string"),
        ({"name": None}, "name must be a string"),
        ({"name": BATCH, "arguments": [1]}, "arguments must be an object"),
        ({"name": "no-such-workflow"}, "unknown prompt 'no-such-workflow'"),
    ],
)
def test_get_errors_are_invalid_params(server: Server, params: dict[str, Any], detail: str) -> None:
    error = server.error("prompts/get", params)
    assert error["code"] == -32602 and error["message"] == f"Invalid params: {detail}"
    assert error["data"]["details"] == detail


def test_unknown_prompt_names_the_closest(server: Server) -> None:
    error = server.error("prompts/get", {"name": "simple-batch"})
    assert BATCH in error["data"]["didYouMean"]
    error = server.error("prompts/get", {"name": "x" * 5000})
    assert len(error["data"]["details"]) < 200


def test_capability_is_announced(server: Server) -> None:
    assert server.initialized is not None
    assert server.initialized["capabilities"]["prompts"] == {"listChanged": True}
    server.send(modern_request("server/discover", rid="d"))
    assert server.response("d")["result"]["capabilities"]["prompts"] == {"listChanged": False}


def test_prompts_wait_for_initialize() -> None:
    with Server(*ARGS) as fresh:
        for method, params in (("prompts/list", {}), ("prompts/get", {"name": BATCH})):
            assert fresh.error(method, params)["code"] == -32000
        fresh.initialize()
        assert fresh.result("prompts/list")["prompts"]


@pytest.mark.parametrize("version", [*KNOWN, MODERN])
def test_results_match_the_sdk_types(version: str) -> None:
    with Server(*ARGS) as s:
        if version == MODERN:
            results = {}
            for method, params in (("prompts/list", {}), ("prompts/get", {"name": BATCH})):
                s.send(modern_request(method, params, rid=method))
                results[method] = s.response(method)["result"]
        else:
            s.initialize(version)
            results = {
                "prompts/list": s.result("prompts/list"),
                "prompts/get": s.result("prompts/get", {"name": BATCH}),
            }
        listed = parse_server_result("prompts/list", version, results["prompts/list"])
        assert isinstance(listed, types.ListPromptsResult)
        got = parse_server_result("prompts/get", version, results["prompts/get"])
        assert isinstance(got, types.GetPromptResult)


def test_list_changed_is_announced(tmp_path: Path) -> None:
    shutil.copy(LOOPS / "simple-batch.json", tmp_path / "simple-batch.json")
    with Server("--no-bundled", "--workflows", str(tmp_path)) as s:
        s.initialize()
        assert [p["name"] for p in s.result("prompts/list")["prompts"]] == [BATCH]
        shutil.copy(LOOPS / "simple-retry.json", tmp_path / "simple-retry.json")
        changed = {"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}
        for _ in range(100):  # the catalog looks for changes every fraction of a second
            if changed in s.notifications:
                break
            s.result("ping")
            time.sleep(0.05)
        assert changed in s.notifications
        assert "simple-retry-example" in {p["name"] for p in s.result("prompts/list")["prompts"]}


def test_no_workflows_no_prompts(tmp_path: Path) -> None:
    with Server("--no-bundled", "--workflows", str(tmp_path)) as s:
        s.initialize()
        assert s.result("prompts/list") == {"prompts": []}


def test_http_gives_the_same_prompts(server: Server) -> None:
    with HttpServer(*ARGS) as http:
        for rid, (method, params) in enumerate((("prompts/list", {}), ("prompts/get", {"name": BATCH}))):
            message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
            server.send(message)
            assert http.post(message).json() == server.response(rid)
