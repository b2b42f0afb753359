"""The scripted agent walks corpus workflows with loops to completion through a real
`handrail start` process, by tools/call alone.

The workflow is compiled in-process only to give the walker its model (which
context variables feed which loop). Every workflow_next answer comes off the
pipe, is checked against the tool's outputSchema, and must equal what the engine
answers in-process for the same call: the transport adds and loses nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema.validators import validator_for
from referencing import Registry

from handrail.compiler import compile_path
from handrail.model.workflow import Loop, Workflow
from tests.conftest import CORPUS
from tests.helpers.server import Server
from tests.helpers.walker import Walk, engine_call, walk
from tests.helpers.wire import wire_next

# served or walked workflows come from the WorkRail corpus
pytestmark = [pytest.mark.corpus, pytest.mark.slow]

WALKED = [
    "workflows/examples/loops/simple-batch.json",
    "workflows/examples/loops/simple-polling.json",
    "workflows/examples/loops/simple-retry.json",
    "workflows/examples/loops/simple-search.json",
    "workflows/coding-task-workflow-with-loops.json",
]
# The walker's context makes simple-polling's while loop end before its body runs.
BODY_RUNS = {p for p in WALKED if "polling" not in p}


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with Server("--no-bundled", "--workflows", str(CORPUS / "workflows")) as s:
        s.initialize()
        yield s


@pytest.fixture(scope="module")
def output_schemas(server: Server) -> dict[str, Any]:
    schemas = {}
    for tool in server.result("tools/list")["tools"]:
        schema = tool["outputSchema"]
        schemas[tool["name"]] = validator_for(schema)(schema, registry=Registry())
    return schemas


def compiled(relative: str) -> Workflow:
    workflow = compile_path(CORPUS / relative).workflow
    assert workflow is not None, relative
    return workflow


def tool_call(
    server: Server, schemas: dict[str, Any], name: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    result = server.call(name, arguments)
    assert result["isError"] is False, result["content"][0]["text"]
    structured: dict[str, Any] = result["structuredContent"]
    assert json.loads(result["content"][0]["text"]) == structured
    errors = [e.message for e in schemas[name].iter_errors(structured)]
    assert not errors, errors
    return structured


@pytest.mark.parametrize("relative", WALKED, ids=lambda p: Path(p).stem)
def test_walk_to_completion_over_stdio(server: Server, output_schemas: dict[str, Any], relative: str) -> None:
    workflow = compiled(relative)

    def call_next(params: dict[str, Any]) -> dict[str, Any]:
        answer = tool_call(server, output_schemas, "workflow_next", params)
        expected = wire_next(
            workflow,
            params["completedSteps"],
            json.loads(json.dumps(params.get("context"))),
            state=params.get("state"),
        )
        assert answer == json.loads(json.dumps(expected)), "the server and the engine disagree"
        return answer

    def check_step(result: dict[str, Any], record: Walk) -> None:
        step_id = result["step"]["id"]
        checked = tool_call(
            server,
            output_schemas,
            "workflow_validate",
            {
                "workflowId": workflow.id,
                "stepId": step_id,
                "output": f"Did {step_id}.",
                "context": record.context,
            },
        )
        assert isinstance(checked["valid"], bool)

    record = walk(call_next, workflow, on_step=check_step)
    assert record.results[-1]["isComplete"] is True
    assert record.results[-1]["step"] is None
    assert record.steps and set(record.steps) <= set(workflow.nodes)
    assert any(isinstance(n, Loop) for n in workflow.nodes.values()), "the walked workflows have loops"
    if relative in BODY_RUNS:
        assert any(r.get("loop") for r in record.results), "a loop body ran"

    in_process = walk(engine_call(workflow), workflow)
    assert record.steps == in_process.steps
    assert record.context == in_process.context


def test_walks_interleave_on_one_server(server: Server, output_schemas: dict[str, Any]) -> None:
    """Two agents' walks, call by call in turn: the server keeps no session state."""
    workflows = [compiled(WALKED[0]), compiled(WALKED[2])]
    states: list[dict[str, Any]] = [
        {"completedSteps": [], "context": {}, "state": None, "steps": [], "done": False} for _ in workflows
    ]
    for _ in range(200):
        if all(s["done"] for s in states):
            break
        for workflow, s in zip(workflows, states, strict=True):
            if s["done"]:
                continue
            params = {
                "workflowId": workflow.id,
                "completedSteps": s["completedSteps"],
                "context": s["context"],
            }
            if s["state"] is not None:
                params["state"] = s["state"]
            result = tool_call(server, output_schemas, "workflow_next", params)
            if result["isComplete"]:
                s["done"] = True
            elif result["step"] is None:
                for name in result["guidance"]["missingContext"]:
                    s["context"][name] = ["first", "second"] if name == "items" else 2
            else:
                s["steps"].append(result["step"]["id"])
                s["completedSteps"] = [*result["completedSteps"], result["step"]["id"]]
                s["state"] = result["state"]
    assert all(s["done"] for s in states)
    for workflow, s in zip(workflows, states, strict=True):
        assert s["steps"] == walk(engine_call(workflow), workflow).steps
