"""Limits on what a client sends (handrail.model.limits): each is configurable, and a request
over one is refused with -32602 naming the limit and its value, through a real
`handrail start` and in-process. Also: errors put no traceback, no path outside the
workflow sources and no environment data on the wire.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handrail.catalog import load_catalog
from handrail.model.errors import InvalidParams
from handrail.model.limits import MAX_LINE_BYTES, Limits
from handrail.protocol.core import Protocol
from handrail.service.core import Service
from tests.conftest import CORPUS
from tests.helpers.server import Server

LOOPS = CORPUS / "workflows" / "examples" / "loops"
BATCH = "simple-batch-example"
SMALL = Limits(
    max_line_bytes=65_536,
    max_output_length=1000,
    max_context_bytes=500,
    max_depth=6,
    max_completed_steps=3,
    max_workflow_bytes=2000,
    regex_timeout_ms=50,
)
START_OPTIONS = (
    "--max-line",
    "65536",
    "--max-output",
    "1000",
    "--max-context",
    "500",
    "--max-depth",
    "6",
    "--max-completed-steps",
    "3",
    "--max-file-size",
    "2000",
    "--regex-timeout",
    "50",
)


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


# (tool, arguments over the limit, the limit named, arguments just under it)
OVER = [
    (
        "workflow_validate",
        {"workflowId": BATCH, "stepId": "load-data", "output": "x" * 1001},
        "maxOutputLength",
        {"workflowId": BATCH, "stepId": "load-data", "output": "x" * 1000},
    ),
    (
        "workflow_next",
        {"workflowId": BATCH, "completedSteps": ["load-data"], "context": {"pad": "p" * 500}},
        "maxContextBytes",
        {"workflowId": BATCH, "completedSteps": ["load-data"], "context": {"pad": "p" * 480}},
    ),
    (
        "workflow_validate",
        {"workflowId": BATCH, "stepId": "load-data", "output": "x", "context": {"pad": "é" * 300}},
        "maxContextBytes",
        {"workflowId": BATCH, "stepId": "load-data", "output": "x", "context": {"pad": "é" * 200}},
    ),
    (
        "workflow_next",
        {"workflowId": BATCH, "completedSteps": [], "context": nested(6)},  # 7 levels with the arguments
        "maxDepth",
        {"workflowId": BATCH, "completedSteps": [], "context": nested(5)},
    ),
    (
        "workflow_next",
        {"workflowId": BATCH, "completedSteps": ["a", "b", "c", "d"]},
        "maxCompletedSteps",
        {"workflowId": BATCH, "completedSteps": ["load-data"]},
    ),
    (
        "workflow_validate_json",
        {"workflow": "{" + " " * 2000 + "}"},
        "maxWorkflowBytes",
        {"workflow": "{" + " " * 1990 + "}"},
    ),
]
LIMIT_VALUES = SMALL.describe()


@pytest.fixture(scope="module")
def protocol(corpus: Path) -> Protocol:
    protocol = Protocol(Service(load_catalog(LOOPS, bundled=False), SMALL))
    protocol.handle(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}},
            }
        )
    )
    return protocol


@pytest.fixture(scope="module")
def server(corpus: Path) -> Iterator[Server]:
    with Server("--no-bundled", "--workflows", str(LOOPS), *START_OPTIONS) as s:
        s.initialize()
        yield s


def _over_the_limit(data: dict[str, Any], limit: str) -> None:
    assert data["limit"] == limit
    assert data["value"] == LIMIT_VALUES[limit]
    assert str(LIMIT_VALUES[limit]) in data["details"]


@pytest.mark.parametrize(
    ("tool", "over", "limit", "under"), OVER, ids=lambda v: v if isinstance(v, str) else ""
)
def test_each_limit_refuses_in_process(
    protocol: Protocol, tool: str, over: Any, limit: str, under: Any
) -> None:
    with pytest.raises(InvalidParams) as caught:
        protocol.service.call(tool, over)
    _over_the_limit(caught.value.data, limit)
    protocol.service.call(tool, under)  # just under: no limit stands in the way


@pytest.mark.slow
@pytest.mark.parametrize(
    ("tool", "over", "limit", "under"), OVER, ids=lambda v: v if isinstance(v, str) else ""
)
def test_each_limit_refuses_through_handrail_start(
    server: Server, tool: str, over: Any, limit: str, under: Any
) -> None:
    result = server.call(tool, over)  # tools/call: a tool error the model can read
    assert result["isError"] is True
    error = result["structuredContent"]
    assert error["code"] == -32602
    _over_the_limit(error["data"], limit)
    direct = server.error(tool, over)  # the direct method: a JSON-RPC error
    assert direct["code"] == -32602
    _over_the_limit(direct["data"], limit)
    assert server.call(tool, under)["structuredContent"].get("code") != -32602


def test_a_line_over_the_limit_is_refused_with_its_limit_and_the_server_goes_on(server: Server) -> None:
    server.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"p":"' + b"y" * 200_000 + b'"}}\n')
    reply = server.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32600
    assert reply["error"]["data"]["limit"] == "maxLineBytes" and reply["error"]["data"]["value"] == 65536
    assert server.result("ping") == {}


def test_nesting_past_the_stack_is_a_clean_error(server: Server) -> None:
    for depth in (1_100, 30_000):
        server.send_raw(
            b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"a":' + b"[" * depth + b"]" * depth + b"}}\n"
        )
        reply = server.recv()
        assert reply["id"] is None and reply["error"]["code"] == -32700
        assert "deep" in reply["error"]["data"]["details"]
    # parsed (under the parsers' own limit), but deeper than maxDepth: refused unread
    head = {
        "jsonrpc": "2.0",
        "id": 6,
        "method": "workflow_next",
        "params": {"workflowId": BATCH, "completedSteps": []},
    }
    context = b'{"a":' * 900 + b"1" + b"}" * 900
    server.send_raw(json.dumps(head).encode()[:-2] + b',"context":' + context + b"}}\n")
    reply = server.response(6)
    assert reply["error"]["code"] == -32602 and reply["error"]["data"]["limit"] == "maxDepth"
    assert server.result("ping") == {}


def test_a_huge_number_is_an_answer_not_a_crash(server: Server) -> None:
    big = 10**400  # past 64 bits, within maxContextBytes
    reply = server.request(
        "workflow_next", {"workflowId": BATCH, "completedSteps": [], "context": {"n": big}}
    )
    assert "result" in reply
    reply = server.request("ping", rid=2**80)
    assert reply == {"jsonrpc": "2.0", "id": 2**80, "result": {}}


def test_limits_are_checked_before_the_schema_and_the_engine(protocol: Protocol) -> None:
    # a 20,000-entry completedSteps is refused before uniqueItems compares its entries
    with pytest.raises(InvalidParams) as caught:
        protocol.service.call("workflow_next", {"workflowId": BATCH, "completedSteps": ["x"] * 20_000})
    assert caught.value.data["limit"] == "maxCompletedSteps"


def test_the_defaults() -> None:
    assert Limits().describe() == {
        "maxLineBytes": MAX_LINE_BYTES,
        "maxOutputLength": 1024 * 1024,
        "maxContextBytes": 1024 * 1024,
        "maxDepth": 64,
        "maxCompletedSteps": 10_000,
        "maxWorkflowBytes": 1_000_000,
        "regexTimeoutMs": 100,
        "maxRequestSeconds": 5,
        "maxReplyBytes": MAX_LINE_BYTES,
        "maxWorkflowSteps": 5_000,
        "maxWorkflowDepth": 100,
    }
    with pytest.raises(ValueError, match="maxDepth"):
        Limits(max_depth=0)


def test_start_refuses_a_limit_that_is_not_a_positive_integer() -> None:
    from handrail.cli import main

    assert main(["start", "--max-output", "0"]) == 2
    assert main(["start", "--max-depth", "many"]) == 2
    assert main(["start", "--max-request-seconds", "0"]) == 2
    assert main(["serve", "--max-reply", "-1"]) == 2


# -- what an error may say ---------------------------------------------------------------

SECRET = "handrail-test-secret-0d5c"


@pytest.fixture
def faulty(corpus: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    monkeypatch.setenv("HANDRAIL_TEST_SECRET", SECRET)
    folder = tmp_path / "flows"
    folder.mkdir()
    (folder / "broken.json").write_text('{"id": "broken", "steps": [', encoding="utf-8")
    with Server("--no-bundled", "--workflows", str(folder), "--workflows", str(LOOPS), faults=True) as s:
        s.initialize()
        yield s, folder


def _forbidden(server: Server, folder: Path) -> list[str]:
    """Text that must not reach stdout: paths of the machine other than the workflow
    files, the environment, the traceback of an internal error."""
    home = str(Path.home())
    return [
        SECRET,
        "Traceback",
        'File "',
        "injected secret detail",
        str(Path(__file__).resolve().parents[2] / "src"),
        sys.prefix,
        os.getcwd(),
        str(server.folder),
        *([home] if home not in str(folder) else []),
    ]


@pytest.mark.slow
def test_errors_put_no_traceback_path_or_environment_on_the_wire(faulty: tuple[Server, Path]) -> None:
    server, folder = faulty
    crash = server.error("tools/call", {"name": "workflow_get", "arguments": {"id": "fault-crash"}})
    assert crash["code"] == -32603 and set(crash["data"]) == {"errorId"}  # an unexpected exception
    direct = server.error("workflow_get", {"id": "fault-crash"})
    assert direct["code"] == -32603 and set(direct["data"]) == {"errorId"}
    assert server.stderr_has("injected secret detail")  # the operator sees it, the client does not

    listing = server.call("workflow_list")["structuredContent"]
    (problem,) = listing["diagnostics"]
    assert problem["file"] == str(folder / "broken.json")  # the workflow file's own path
    schema_ref = {
        "id": "workflow",
        "name": "W",
        "description": "d",
        "version": "1.0.0",
        "steps": [
            {
                "id": "s-1",
                "title": "t",
                "prompt": "p",
                "validationCriteria": [
                    {"type": "schema", "schema": {"$ref": "file:///nonexistent/dir/x.json"}, "message": "m"},
                    {"type": "schema", "schema": {"$ref": f"file://{sys.prefix}/pyvenv.cfg"}, "message": "m"},
                ],
            }
        ],
    }
    checked = server.call("workflow_validate_json", {"workflow": json.dumps(schema_ref)})["structuredContent"]
    refusals = [(d["code"], "points outside the schema" in d["message"]) for d in checked["diagnostics"]]
    assert refusals == [("H402", True), ("H402", True)], checked  # read nothing, said nothing of the files
    server.call("workflow_validate", {"workflowId": "nope", "stepId": "x", "output": "y"})
    server.call("workflow_next", {"workflowId": BATCH, "completedSteps": [], "state": {"loops": "x"}})
    server.request("resources/read", {"uri": "workflow://../../etc/passwd"})
    server.request("no/such/method", {})

    wire = b"".join(server.lines).decode("utf-8", "replace")
    wire = wire.replace(json.dumps(str(folder / "broken.json"))[1:-1], "<the broken workflow file>")
    wire = wire.replace(f"file://{sys.prefix}/pyvenv.cfg", "<the uri the client sent>")
    leaks = [text for text in _forbidden(server, folder) if text and text in wire]
    assert leaks == []


def test_remote_schema_references_are_never_fetched(tmp_path: Path) -> None:
    from handrail.compiler import compile_text

    target = tmp_path / "schema.json"
    target.write_text('{"type": "string"}', encoding="utf-8")  # would load, if it were read
    for ref in (target.as_uri(), "http://127.0.0.1:9/schema.json", "other.json", "data:,{}"):
        source = {
            "id": "workflow",
            "name": "W",
            "description": "d",
            "version": "1.0.0",
            "steps": [
                {
                    "id": "s-1",
                    "title": "t",
                    "prompt": "p",
                    "validationCriteria": [{"type": "schema", "schema": {"$ref": ref}, "message": "m"}],
                }
            ],
        }
        compiled = compile_text(json.dumps(source))
        assert compiled.workflow is None
        (problem,) = compiled.diagnostics
        assert problem.code == "H402" and "points outside the schema" in problem.message, problem
