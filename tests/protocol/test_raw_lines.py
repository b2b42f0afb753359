"""The real `handrail start` process, driven line by line over its pipes.

Framing, every error code and its data, ordering, batches, notifications, the
lifecycle before initialization, the version policy, the tools and resources, and
how the process ends. Every line the server writes to stdout is checked (by
`Server`) to be one JSON-RPC message; a test module's shared server runs with
--log-level debug so that any log line leaking onto stdout would be caught.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema.validators import validator_for
from referencing import Registry

from handrail.compiler import compile_path
from tests.conftest import CORPUS, corpus_text
from tests.helpers.server import LATEST, Server, check_message, clean_env, command

LOOPS = CORPUS / "workflows" / "examples" / "loops"
ARGS = ("--no-bundled", "--workflows", str(LOOPS))
KNOWN = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
TOOLS = [
    "workflow_list",
    "workflow_get",
    "workflow_next",
    "workflow_validate",
    "workflow_validate_json",
    "workflow_get_schema",
    "workflow_start",
    "workflow_continue",
    "workflow_resume",
    "workflow_abandon",
    "workflow_claim",
]
BATCH = "simple-batch-example"


def loop_workflows() -> dict[str, Any]:
    found = {}
    for path in sorted(LOOPS.glob("*.json")):
        workflow = compile_path(path).workflow
        assert workflow is not None, path
        found[workflow.id] = workflow
    return found


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """One initialized server for every test that leaves it as it found it."""
    with Server(*ARGS, "--log-level", "debug") as s:
        s.initialize()
        yield s


@pytest.fixture
def fresh() -> Iterator[Server]:
    """A server of the test's own, not initialized."""
    with Server(*ARGS) as s:
        yield s


def error_of(reply: dict[str, Any], code: int, rid: Any = ...) -> dict[str, Any]:
    assert "error" in reply, reply
    if rid is not ...:
        assert reply["id"] == rid, reply
    error: dict[str, Any] = reply["error"]
    assert error["code"] == code, reply
    return error


def validator(schema: dict[str, Any]) -> Any:
    cls = validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, registry=Registry())  # no registry: every $ref must resolve inside


def ping_answers(s: Server) -> None:
    """The server is alive and nothing unanswered or unexpected is queued before this reply."""
    rid = f"ping-{s.new_id()}"
    s.send({"jsonrpc": "2.0", "id": rid, "method": "ping"})
    assert s.response(rid) == {"jsonrpc": "2.0", "id": rid, "result": {}}


# -- framing -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.corpus
def test_pipelined_requests_are_answered_one_line_each_in_order(server: Server) -> None:
    messages: list[dict[str, Any]] = []
    for n in range(60):
        rid: Any = n if n % 2 else f"req-{n}"
        method, params = [
            ("ping", None),
            ("tools/list", {}),
            (
                "tools/call",
                {"name": "workflow_next", "arguments": {"workflowId": BATCH, "completedSteps": []}},
            ),
            ("no/such/method", {}),
            ("resources/list", None),
            ("workflow_list", None),
        ][n % 6]
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        messages.append(message)
    before, noted = len(server.lines), len(server.notifications)
    server.send(*messages)
    replies = [server.response(m["id"]) for m in messages]
    assert [r["id"] for r in replies] == [m["id"] for m in messages]
    assert all(
        ("error" in r) == (m["method"] == "no/such/method") for r, m in zip(replies, messages, strict=True)
    )
    assert len(server.lines) - before == len(messages) + len(server.notifications) - noted


def test_utf8_text_round_trips(server: Server) -> None:
    rid = "é✓😀-ñ"
    server.send({"jsonrpc": "2.0", "id": rid, "method": "ping"})
    assert server.response(rid)["id"] == rid
    text = '{"id": "x", "name": "Ünïcødé ✓ 😀"}'
    result = server.call("workflow_validate_json", {"workflow": text})
    assert result["isError"] is False
    raw = server.lines[-1]
    raw.decode("utf-8")  # strict
    assert raw.count(b"\n") == 1 and raw.endswith(b"\n")


def test_blank_lines_and_crlf(server: Server) -> None:
    server.send_raw(b"\n   \n\t\n")
    server.send_raw(b'{"jsonrpc":"2.0","id":"crlf","method":"ping"}\r\n')
    assert server.response("crlf") == {"jsonrpc": "2.0", "id": "crlf", "result": {}}


@pytest.mark.parametrize(
    "line",
    [
        b"{bad json",
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping"',
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}}',
        b"nul",
        b'"unterminated',
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": NaN}}',
        b"\xff\xfe{}",
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "\xff"}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "\xed\xa0\x80"}}',
        b'\xef\xbb\xbf{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
    ],
    ids=[
        "garbage",
        "truncated",
        "trailing",
        "bare-word",
        "open-string",
        "nan",
        "bom16",
        "bad-utf8",
        "utf8-surrogate",
        "utf8-bom",
    ],
)
def test_unparsable_line_is_a_parse_error(server: Server, line: bytes) -> None:
    server.send_raw(line + b"\n")
    error = error_of(server.response(None), -32700, None)
    assert isinstance(error["data"]["details"], str) and error["data"]["details"]
    assert error["message"] == f"Parse error: {error['data']['details']}"  # what SDK users see
    ping_answers(server)


@pytest.mark.parametrize(
    ("message", "rid", "detail"),
    [
        ({"jsonrpc": "1.0", "id": 5, "method": "ping"}, 5, "jsonrpc"),
        ({"id": "no-version", "method": "ping"}, "no-version", "jsonrpc"),
        ({"jsonrpc": 2.0, "id": 6, "method": "ping"}, 6, "jsonrpc"),
        ({"jsonrpc": "2.0", "id": 7, "method": 42}, 7, "method"),
        ({"jsonrpc": "2.0", "id": 8, "method": None}, 8, "method"),
        ({"jsonrpc": "2.0", "id": 9}, 9, "method"),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None, "id"),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None, "id"),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None, "id"),
        ({"jsonrpc": "2.0", "id": [1], "method": "ping"}, None, "id"),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, None, "id"),
        (42, None, "object"),
        ("ping", None, "object"),
        (None, None, "object"),
        (True, None, "object"),
    ],
    ids=lambda v: json.dumps(v)[:40] if not isinstance(v, str) or len(v) > 8 else v,
)
def test_invalid_request(server: Server, message: Any, rid: Any, detail: str) -> None:
    server.send(message)
    error = error_of(server.response(rid), -32600, rid)
    assert detail in error["data"]["details"]
    assert error["message"] == f"Invalid Request: {error['data']['details']}"
    ping_answers(server)


def test_empty_array_is_one_invalid_request(server: Server) -> None:
    server.send_raw(b"[]\n")
    reply = server.recv()
    assert isinstance(reply, dict), "an empty batch gets one error object, not an array"
    error = error_of(reply, -32600, None)
    assert error["data"]["details"]
    ping_answers(server)


@pytest.mark.parametrize(
    "rid",
    [2**53 + 1, 2**63 - 1, 2**64 - 1, 2**64, 2**70, -(2**63), -(2**63) - 1, 10**40, -(10**40), 0],
    ids=str,
)
def test_huge_integer_ids_are_echoed_exactly(server: Server, rid: int) -> None:
    server.send_raw(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % rid)
    assert server.response(rid) == {"jsonrpc": "2.0", "id": rid, "result": {}}
    assert b'"id":%d' % rid in server.lines[-1].replace(b" ", b"")


def test_huge_integer_id_on_an_error_reply(server: Server) -> None:
    rid = 2**80
    server.send_raw(b'{"jsonrpc":"2.0","id":%d,"method":"no/such"}\n' % rid)
    error_of(server.response(rid), -32601, rid)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _deep_object(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _line(rid: int, method: str, params: str) -> str:
    return f'{{"jsonrpc":"2.0","id":{rid},"method":"{method}","params":{params}}}'


@pytest.mark.parametrize(
    ("line", "rid"),
    [
        (_deep(100_000), None),
        (_line(1, "ping", '{"a":' + _deep(5000) + "}"), None),
        (_line(2, "ping", '{"a":' + _deep_object(2000) + "}"), None),
        (_line(3, "ping", '{"a":' + _deep(200) + "}"), 3),
        (_line(4, "tools/call", '{"name":' + _deep_object(1000) + "}"), 4),
        (_line(5, "workflow_get", '{"id":' + _deep_object(900) + "}"), 5),
        (
            _line(
                6,
                "tools/call",
                '{"name":"workflow_next","arguments":{"workflowId":"simple-batch-example",'
                '"completedSteps":[],"context":{"x":' + _deep_object(900) + "}}}",
            ),
            6,
        ),
        (
            _line(
                7,
                "tools/call",
                '{"name":"workflow_validate_json","arguments":{"workflow":'
                + json.dumps(_deep(50_000))
                + "}}",
            ),
            7,
        ),
        ("[" + ",".join([_deep(3000)] * 3) + "]", None),
    ],
    ids=[
        "array-100k",
        "params-array-5k",
        "params-object-2k",
        "params-200",
        "tool-name-1000",
        "workflow-id-900",
        "context-900",
        "workflow-text-50k",
        "batch-of-deep",
    ],
)
def test_deep_nesting_gets_one_well_formed_reply(server: Server, line: str, rid: Any) -> None:
    server.send_raw(line.encode() + b"\n")
    reply = server.recv()
    check_message(reply)
    if rid is None:
        error = error_of(reply, -32700, None)
        assert "deep" in error["data"]["details"]
    else:
        assert reply["id"] == rid
        assert reply.get("error", {}).get("code") != -32603, reply
    ping_answers(server)


@pytest.mark.corpus
def test_large_request_gets_one_reply(server: Server) -> None:
    output = "done " * 200_000  # 1 MB: under the 1 MiB output limit (tests/reliability/test_limits.py)
    result = server.call("workflow_validate", {"workflowId": BATCH, "stepId": "load-data", "output": output})
    assert result["isError"] is False and result["structuredContent"]["valid"] is True
    padding = "x" * 3_000_000
    reply = server.request("ping", {"_meta": {"padding": padding}})
    assert reply["result"] == {}


@pytest.mark.slow
def test_line_over_the_limit_is_refused_and_skipped() -> None:
    with Server(*ARGS, "--max-line", "65536") as s:
        s.initialize()
        s.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"y" * 300_000 + b'"}}\n')
        error = error_of(s.recv(), -32600, None)
        assert error["data"]["value"] == 65536
        assert "65536" in error["data"]["details"]
        s.send_raw(b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"' + b"z" * 60_000 + b'"}}\n')
        assert s.response(2)["result"] == {}


# -- methods and their errors ------------------------------------------------------------


def test_ping(server: Server) -> None:
    assert server.request("ping", rid="p") == {"jsonrpc": "2.0", "id": "p", "result": {}}
    assert server.result("ping", {}) == {}


@pytest.mark.parametrize("method", ["no/such/method", "tools/nope", "workflow_delete", "", "Ping"])
def test_unknown_method(server: Server, method: str) -> None:
    error = error_of(server.request(method, {}), -32601)
    assert error["message"] == f"Method not found: `{method}`"
    assert error["data"] == {"method": method}


@pytest.mark.parametrize("params", [[1, 2], "text", 3, True])
def test_params_that_are_not_an_object(server: Server, params: Any) -> None:
    error = error_of(server.request("tools/list", params), -32602)
    assert "params" in error["data"]["details"]


def test_notifications_get_no_response(server: Server) -> None:
    server.send(
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "method": "notifications/no-such-thing", "params": [1, 2]},
        {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "nope"}},
        {"jsonrpc": "1.0", "method": "ping"},
        {"jsonrpc": "2.0", "id": "client-answer", "result": {}},
        {"jsonrpc": "2.0", "id": 77, "error": {"code": -1, "message": "client error"}},
    )
    ping_answers(server)


def test_batch_answers_in_order_without_notifications(server: Server) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": "b1", "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "b2", "method": "tools/call", "params": {"name": "workflow_list"}},
        7,
        {"jsonrpc": "2.0", "id": "b3", "method": "no/such"},
        {"jsonrpc": "2.0", "id": "b4", "method": "workflow_get", "params": {"id": "no-such-workflow"}},
        {"jsonrpc": "2.0", "id": 2**70, "method": "ping"},
    ]
    server.send(batch)
    replies = server.recv()
    assert isinstance(replies, list)
    assert [r["id"] for r in replies] == ["b1", "b2", None, "b3", "b4", 2**70]
    assert replies[0]["result"] == {}
    assert replies[1]["result"]["isError"] is False
    error_of(replies[2], -32600)
    error_of(replies[3], -32601)
    error_of(replies[4], -32001)


def test_batch_of_notifications_gets_nothing(server: Server) -> None:
    server.send(
        [{"jsonrpc": "2.0", "method": "notifications/initialized"}, {"jsonrpc": "2.0", "method": "x"}]
    )
    ping_answers(server)


def test_batch_of_invalid_elements(server: Server) -> None:
    server.send([1, "two", None])
    replies = server.recv()
    assert isinstance(replies, list) and len(replies) == 3
    for reply in replies:
        error_of(reply, -32600, None)


# -- lifecycle: before initialize, initialize, the version policy -------------------------


@pytest.mark.slow
def test_before_initialize_only_initialize_and_ping_are_served(fresh: Server) -> None:
    for method, params in [
        ("tools/list", {}),
        ("tools/call", {"name": "workflow_list", "arguments": {}}),
        ("resources/list", {}),
        ("resources/read", {"uri": f"workflow://{BATCH}"}),
        ("workflow_list", None),
        ("workflow_next", {"workflowId": BATCH, "completedSteps": []}),
        ("shutdown", None),
        ("no/such/method", {}),
    ]:
        error = error_of(fresh.request(method, params), -32000)
        assert error["message"] == f"Server not initialized: `{method}`"
        assert error["data"] == {"method": method}
    assert fresh.result("ping") == {}
    fresh.notify("notifications/initialized")  # out of turn: still no response
    ping_answers(fresh)
    assert fresh.initialize()["protocolVersion"] == LATEST
    assert len(fresh.result("tools/list")["tools"]) == len(TOOLS)


INITIALIZE_PARAMS = [
    ({"capabilities": {}}, "protocolVersion is required"),
    ({"protocolVersion": 20241105, "capabilities": {}}, "protocolVersion must be a string"),
    ({"protocolVersion": None, "capabilities": {}}, "protocolVersion must be a string"),
    ({"protocolVersion": LATEST}, "capabilities is required"),
    ({"protocolVersion": LATEST, "capabilities": []}, "capabilities must be an object"),
    ({"protocolVersion": LATEST, "capabilities": "all"}, "capabilities must be an object"),
    ({"protocolVersion": LATEST, "capabilities": None}, "capabilities must be an object"),
    (None, "protocolVersion is required"),
    ([LATEST, {}], "params must be an object"),
]


@pytest.mark.slow
def test_initialize_params_are_checked(fresh: Server) -> None:
    for params, detail in INITIALIZE_PARAMS:
        error = error_of(fresh.request("initialize", params), -32602)
        assert error["message"] == f"Invalid params: {detail}"
        assert error["data"] == {"details": detail}, params
        error_of(fresh.request("tools/list"), -32000)  # a refused initialize initializes nothing


REJECTED = [
    "2024-10-07",
    "2024-11-04",
    "1999-01-01",
    "2025-13-01",
    "2025-06-32",
    "2025-6-18",
    "25-06-18",
    "latest",
    "",
    " 2025-06-18",
    "2025-06-18 ",
    "2025-06-18T00:00:00Z",
    "v2025-06-18",
    "2099-1-1",
]


@pytest.mark.slow
def test_unsupported_versions_are_refused_with_the_supported_list(fresh: Server) -> None:
    for version in REJECTED:
        params = {"protocolVersion": version, "capabilities": {}}
        error = error_of(fresh.request("initialize", params), -32000)
        assert error["message"] == "Unsupported protocol version"
        assert error["data"] == {"supportedVersions": KNOWN, "requestedVersion": version}
        error_of(fresh.request("tools/list"), -32000)
    assert fresh.initialize("2024-11-05")["protocolVersion"] == "2024-11-05"


@pytest.mark.slow
def test_known_versions_are_echoed_and_newer_dates_get_the_newest() -> None:
    cases = {v: v for v in KNOWN} | {"2026-07-28": LATEST, "2099-12-31": LATEST, "2025-11-26": LATEST}
    servers = {version: Server(*ARGS) for version in cases}  # started together: spawning is the cost
    try:
        for version, expected in cases.items():
            assert servers[version].initialize(version)["protocolVersion"] == expected, version
            assert len(servers[version].result("tools/list")["tools"]) == len(TOOLS)
    finally:
        for s in servers.values():
            s.close()
    for s in servers.values():
        assert not s.violations


@pytest.mark.corpus
def test_initialize_result(server: Server) -> None:
    result = server.initialized
    assert result is not None
    assert result["protocolVersion"] == LATEST
    capabilities = result["capabilities"]
    assert isinstance(capabilities["tools"], dict) and isinstance(capabilities["resources"], dict)
    info = result["serverInfo"]
    assert info["name"] == "workflowlookup"
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", info["version"])
    assert isinstance(info["description"], str) and info["description"]
    text = result["instructions"]
    workflows = loop_workflows()
    for workflow in workflows.values():
        assert f"{workflow.id} ({workflow.step_count} steps)" in text
        assert f"Description: {workflow.description}" in text
    assert "workflow_next" in text and "completedSteps" in text


@pytest.mark.slow
def test_instructions_without_workflows(tmp_path: Path) -> None:
    with Server("--no-bundled", "--workflows", str(tmp_path)) as s:
        text = s.initialize()["instructions"]
        assert text.startswith("No workflows configured")
        assert "--workflows" in text
        assert s.call("workflow_list", {})["structuredContent"]["workflows"] == []


# -- tools ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tools(server: Server) -> dict[str, dict[str, Any]]:
    listed = server.result("tools/list")["tools"]
    return {t["name"]: t for t in listed}


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


@pytest.mark.slow
def test_tools_list(tools: dict[str, dict[str, Any]]) -> None:
    assert list(tools) == TOOLS
    for name, tool in tools.items():
        assert isinstance(tool["title"], str) and tool["title"], name
        assert isinstance(tool["description"], str) and len(tool["description"]) > 20, name
        schema = tool["inputSchema"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False, name
        assert set(schema["required"]) <= set(schema["properties"]), name
        inputs = validator(schema)
        outputs = validator(tool["outputSchema"])
        assert tool["outputSchema"].get("type") == "object", name
        assert all(ref.startswith("#") for ref in _refs(tool["outputSchema"])), name
        assert all(isinstance(v, bool) for v in tool["annotations"].values()), name
        writes = name in (
            "workflow_start",
            "workflow_continue",
            "workflow_abandon",
            "workflow_claim",
        )  # the run tools
        assert tool["annotations"]["readOnlyHint"] is not writes, name
        example = tool["examples"]
        assert example["request"]["method"] == name
        assert not list(inputs.iter_errors(example["request"]["params"])), name
        assert not list(outputs.iter_errors(example["response"])), name


SCHEMA_TEXT = corpus_text("workflows/examples/loops/simple-retry.json")
CALLS = [
    ("workflow_list", {}),
    ("workflow_get", {"id": BATCH}),
    ("workflow_next", {"workflowId": BATCH, "completedSteps": []}),
    ("workflow_next", {"workflowId": BATCH, "completedSteps": ["load-data"], "context": {"items": [1, 2]}}),
    ("workflow_validate", {"workflowId": BATCH, "stepId": "load-data", "output": "Loaded 2 items."}),
    ("workflow_validate_json", {"workflow": SCHEMA_TEXT}),
    ("workflow_validate_json", {"workflow": '{"id": "x"}'}),
    ("workflow_get_schema", {}),
]


@pytest.mark.corpus
@pytest.mark.parametrize(("name", "arguments"), CALLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CALLS)])
def test_tools_call_result(
    server: Server, tools: dict[str, dict[str, Any]], name: str, arguments: dict[str, Any]
) -> None:
    result = server.call(name, arguments)
    assert result["isError"] is False
    structured = result["structuredContent"]
    [block] = result["content"]
    assert block["type"] == "text"
    assert json.loads(block["text"]) == structured
    assert not list(validator(tools[name]["outputSchema"]).iter_errors(structured))


@pytest.mark.corpus
def test_tools_call_results_mean_what_they_say(server: Server) -> None:
    listed = server.call("workflow_list", {})["structuredContent"]
    assert sorted(w["id"] for w in listed["workflows"]) == sorted(loop_workflows())
    got = server.call("workflow_get", {"id": BATCH})["structuredContent"]
    assert got["id"] == BATCH and got["steps"][0]["id"] == "load-data"
    first = server.call("workflow_next", {"workflowId": BATCH, "completedSteps": []})["structuredContent"]
    assert first["step"]["id"] == "load-data" and first["isComplete"] is False
    assert server.call("workflow_validate_json", {"workflow": SCHEMA_TEXT})["structuredContent"]["valid"]
    checked = server.call("workflow_validate_json", {"workflow": '{"id": "x"}'})["structuredContent"]
    assert checked["valid"] is False and checked["diagnostics"]
    assert "$schema" in server.call("workflow_get_schema", {})["structuredContent"]


FAILURES: list[tuple[str, Any, int, dict[str, Any], str]] = [
    # (tool, arguments, code, data items expected, words in the text)
    (
        "workflow_get",
        {"id": "simple-batch"},
        -32001,
        {"workflowId": "simple-batch"},
        "Did you mean simple-batch-example",
    ),
    (
        "workflow_next",
        {"workflowId": "zzz-none", "completedSteps": []},
        -32001,
        {"workflowId": "zzz-none"},
        "workflow_list",
    ),
    (
        "workflow_next",
        {"workflowId": BATCH},
        -32602,
        {"details": "completedSteps is required"},
        "inputSchema",
    ),
    ("workflow_next", {"completedSteps": []}, -32602, {"details": "workflowId is required"}, "inputSchema"),
    ("workflow_get", {"id": "ab"}, -32602, {}, "id"),
    ("workflow_get", {"id": "Has Spaces"}, -32602, {}, "id"),
    ("workflow_get", {"id": BATCH, "extra": 1}, -32602, {"details": "unknown parameter extra"}, "extra"),
    ("workflow_list", {"verbose": True}, -32602, {"details": "unknown parameter verbose"}, "verbose"),
    ("workflow_validate", {"workflowId": BATCH, "stepId": "load-data", "output": ""}, -32602, {}, "output"),
    ("workflow_next", "not-an-object", -32602, {"details": "params must be an object"}, "params"),
    (
        "workflow_validate",
        {"workflowId": BATCH, "stepId": "no-such-step", "output": "x"},
        -32003,
        {"stepId": "no-such-step", "workflowId": BATCH},
        "workflow_get",
    ),
    (
        "workflow_next",
        {"workflowId": BATCH, "completedSteps": ["no-such-step"]},
        -32003,
        {"stepId": "no-such-step"},
        "no-such-step",
    ),
    (
        "workflow_next",
        {"workflowId": BATCH, "completedSteps": [], "currentStep": "no-such-step"},
        -32003,
        {"stepId": "no-such-step"},
        "no-such-step",
    ),
    (
        "workflow_next",
        {"workflowId": BATCH, "completedSteps": [], "state": {"loops": [{"id": "no-loop", "iteration": 1}]}},
        -32005,
        {"loopId": "no-loop"},
        "state",
    ),
]


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("name", "arguments", "code", "data", "words"),
    FAILURES,
    ids=[f"{f[0]}{f[2]}-{i}" for i, f in enumerate(FAILURES)],
)
def test_failed_tool_call_is_an_error_result(
    server: Server, name: str, arguments: Any, code: int, data: dict[str, Any], words: str
) -> None:
    result = server.call(name, arguments)
    assert result["isError"] is True
    structured = result["structuredContent"]
    assert set(structured) == {"code", "message", "data"}
    assert structured["code"] == code
    assert isinstance(structured["message"], str) and structured["message"]
    assert data.items() <= structured["data"].items()
    if code == -32602:
        assert structured["data"]["details"]
    [block] = result["content"]
    assert block["type"] == "text" and words in block["text"]
    assert str(code) in block["text"]


@pytest.mark.corpus
def test_unknown_workflow_names_the_closest_ids(server: Server) -> None:
    result = server.call("workflow_get", {"id": "simple-batch"})
    assert result["structuredContent"]["data"]["didYouMean"][0] == BATCH
    assert BATCH in result["content"][0]["text"]


@pytest.mark.parametrize(
    ("params", "detail"),
    [
        ({"name": "workflow_delete", "arguments": {}}, "unknown tool `workflow_delete`"),
        ({"arguments": {}}, "name is required"),
        ({"name": 42}, "name must be a string"),
        ({"name": {"huge": "x" * 100_000}}, "name must be a string"),
        ({"name": "w" * 100_000}, "unknown tool"),
    ],
    ids=["unknown", "missing", "number", "object", "long"],
)
def test_unknown_tool_is_invalid_params(server: Server, params: dict[str, Any], detail: str) -> None:
    error = error_of(server.request("tools/call", params), -32602)
    assert error["data"]["details"].startswith(detail)
    assert error["message"] == f"Invalid params: {error['data']['details']}"
    assert len(error["data"]["details"]) < 200
    assert error["data"]["tools"] == TOOLS


def test_an_unknown_tool_close_to_a_real_one_is_named_in_the_message(server: Server) -> None:
    error = error_of(server.request("tools/call", {"name": "workflow_nxt", "arguments": {}}), -32602)
    assert error["message"] == "Invalid params: unknown tool `workflow_nxt`; did you mean `workflow_next`?"
    assert error["data"]["didYouMean"] == ["workflow_next"]


# -- the seed's direct form ------------------------------------------------------------------


@pytest.mark.corpus
def test_direct_methods_answer_with_the_seed_shapes(server: Server) -> None:
    params: dict[str, Any] | None
    for params in (None, {}):
        listed = server.result("workflow_list", params)
        assert sorted(w["id"] for w in listed["workflows"]) == sorted(loop_workflows())
        for summary in listed["workflows"]:
            assert set(summary) >= {"id", "name", "description", "category", "version"}
    assert server.result("workflow_get", {"id": BATCH})["id"] == BATCH
    first = server.result("workflow_next", {"workflowId": BATCH, "completedSteps": [], "context": {}})
    assert set(first) >= {"step", "guidance", "isComplete"} and first["step"]["id"] == "load-data"
    checked = server.result("workflow_validate", {"workflowId": BATCH, "stepId": "load-data", "output": "ok"})
    assert set(checked) >= {"valid", "issues", "suggestions"}
    assert server.result("workflow_validate_json", {"workflow": SCHEMA_TEXT})["valid"] is True
    assert "$schema" in server.result("workflow_get_schema", {})


@pytest.mark.corpus
def test_direct_methods_fail_with_json_rpc_errors(server: Server) -> None:
    error = error_of(server.request("workflow_get", {"id": "no-such-workflow"}), -32001)
    assert error["message"] == "Workflow not found: `no-such-workflow`"
    assert error["data"]["workflowId"] == "no-such-workflow"
    error = error_of(server.request("workflow_next", {"completedSteps": []}), -32602)
    assert error["data"] == {"details": "workflowId is required"}
    error = error_of(server.request("workflow_get", {}), -32602)
    assert error["data"] == {"details": "id is required"}
    params: dict[str, Any] = {"workflowId": BATCH, "stepId": "nope-step", "output": "x"}
    error = error_of(server.request("workflow_validate", params), -32003)
    assert error["data"]["stepId"] == "nope-step"
    assert error["message"] == f"Step not found: `nope-step` in workflow `{BATCH}`"
    state = {"loops": [{"id": "nope", "iteration": 1}]}
    params = {"workflowId": BATCH, "completedSteps": [], "state": state}
    error = error_of(server.request("workflow_next", params), -32005)
    assert error["data"]["loopId"] == "nope"


# -- every error class, and the unexpected, through a server with faults injected ------------


@pytest.fixture(scope="module")
def faulty() -> Iterator[Server]:
    with Server(*ARGS, faults=True) as s:
        s.initialize()
        yield s


TITLES = {
    -32001: "Workflow not found",
    -32003: "Step not found",
    -32004: "Validation error",
    -32005: "State error",
    -32006: "Storage error",
    -32007: "Security error",
}


@pytest.mark.slow
@pytest.mark.parametrize("code", sorted(TITLES, reverse=True))
def test_every_error_code_keeps_its_message_and_data(faulty: Server, code: int) -> None:
    wid = f"fault-code{code}"
    error = error_of(faulty.request("workflow_get", {"id": wid}), code)
    assert error == {"code": code, "message": TITLES[code], "data": {"injected": wid}}
    result = faulty.call("workflow_get", {"id": wid})
    assert result["isError"] is True
    assert result["structuredContent"] == error
    assert str(code) in result["content"][0]["text"]


def test_unexpected_failure_is_an_internal_error_without_traceback(faulty: Server) -> None:
    for method, params in [
        ("workflow_get", {"id": "fault-crash"}),
        ("tools/call", {"name": "workflow_get", "arguments": {"id": "fault-crash"}}),
    ]:
        error = error_of(faulty.request(method, params), -32603)
        assert error["message"] == "Internal error"
        assert set(error["data"]) == {"errorId"}
        line = faulty.lines[-1]
        assert b"Traceback" not in line and b"injected secret" not in line and b".py" not in line
        assert faulty.stderr_has(error["data"]["errorId"])
    assert faulty.stderr_has("Traceback") and faulty.stderr_has("injected secret detail")
    ping_answers(faulty)


def test_stray_print_goes_to_stderr(faulty: Server) -> None:
    assert faulty.result("workflow_get", {"id": "fault-print"}) == {"printed": True}
    ping_answers(faulty)
    assert faulty.stderr_has("a stray print from inside a tool")
    assert not any(b"stray print" in line for line in faulty.lines)


# -- resources ---------------------------------------------------------------------------------


@pytest.mark.corpus
def test_resources_list(server: Server) -> None:
    resources = server.result("resources/list")["resources"]
    by_uri = {r["uri"]: r for r in resources}
    assert set(by_uri) == {f"workflow://{i}" for i in loop_workflows()} | {"workflow://schema"}
    for workflow_id in loop_workflows():
        entry = by_uri[f"workflow://{workflow_id}"]
        assert entry["mimeType"] == "application/json" and entry["name"] == workflow_id
        assert entry["description"]
    assert by_uri["workflow://schema"]["mimeType"].endswith("json")


@pytest.mark.corpus
def test_resources_read(server: Server) -> None:
    for workflow_id in loop_workflows():
        uri = f"workflow://{workflow_id}"
        [content] = server.result("resources/read", {"uri": uri})["contents"]
        assert content["uri"] == uri and content["mimeType"] == "application/json"
        document = json.loads(content["text"])
        assert document["id"] == workflow_id
        assert document == server.result("workflow_get", {"id": workflow_id})
    [content] = server.result("resources/read", {"uri": "workflow://schema"})["contents"]
    schema = json.loads(content["text"])
    validator_for(schema).check_schema(schema)
    assert schema == server.result("workflow_get_schema", {})


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"uri": "workflow://no-such-workflow"}, -32002),
        ({"uri": "file:///etc/passwd"}, -32002),
        ({"uri": 42}, -32602),
        ({}, -32602),
    ],
)
def test_resources_read_errors(server: Server, params: dict[str, Any], code: int) -> None:
    error = error_of(server.request("resources/read", params), code)
    if code == -32002:
        assert error["data"] == {"uri": params["uri"]}
    else:
        assert "uri" in error["data"]["details"]


@pytest.mark.slow
@pytest.mark.corpus
def test_resource_list_changed_is_announced(tmp_path: Path) -> None:
    shutil.copy(LOOPS / "simple-batch.json", tmp_path / "simple-batch.json")
    with Server("--no-bundled", "--workflows", str(tmp_path)) as s:
        s.initialize()
        ids = {r["uri"] for r in s.result("resources/list")["resources"]}
        assert ids == {f"workflow://{BATCH}", "workflow://schema"}
        shutil.copy(LOOPS / "simple-retry.json", tmp_path / "simple-retry.json")
        for _ in range(100):  # the catalog looks for changes every fraction of a second
            if any(n["method"] == "notifications/resources/list_changed" for n in s.notifications):
                break
            s.result("ping")
            time.sleep(0.05)
        assert {"jsonrpc": "2.0", "method": "notifications/resources/list_changed"} in s.notifications
        ids = {r["uri"] for r in s.result("resources/list")["resources"]}
        assert "workflow://simple-retry-example" in ids


# -- how the process ends ---------------------------------------------------------------------


@pytest.mark.slow
def test_shutdown_answers_null_then_exits_zero(fresh: Server) -> None:
    fresh.initialize()
    fresh.send(
        {"jsonrpc": "2.0", "id": 99, "method": "shutdown", "params": {}},
        {"jsonrpc": "2.0", "id": 100, "method": "ping"},
    )
    assert fresh.recv() == {"jsonrpc": "2.0", "id": 99, "result": None}
    assert fresh.at_eof(), "nothing is answered after shutdown"
    assert fresh.wait() == 0


@pytest.mark.slow
def test_end_of_input_exits_zero(fresh: Server) -> None:
    fresh.initialize()
    fresh.send_raw(b'{"jsonrpc":"2.0","id":"last","method":"ping"}')  # no newline: the last line
    fresh.close_stdin()
    assert fresh.recv() == {"jsonrpc": "2.0", "id": "last", "result": {}}
    assert fresh.at_eof()
    assert fresh.wait() == 0
    assert "Traceback" not in fresh.stderr


@pytest.mark.slow
def test_end_of_input_before_anything_exits_zero(fresh: Server) -> None:
    fresh.close_stdin()
    assert fresh.at_eof()
    assert fresh.wait() == 0
    assert "Traceback" not in fresh.stderr


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
@pytest.mark.parametrize("initialized", [True, False], ids=["initialized", "idle"])
def test_signals_exit_zero(fresh: Server, signum: signal.Signals, initialized: bool) -> None:
    if initialized:
        fresh.initialize()
    ping_answers(fresh)  # the handlers are installed once the server answers
    fresh.signal(signum)
    assert fresh.wait() == 0
    assert fresh.at_eof()
    assert "Traceback" not in fresh.stderr


@pytest.mark.slow
def test_client_going_away_exits_zero(tmp_path: Path) -> None:
    """The client closes its end of stdout: the next reply cannot be written, the server leaves."""
    proc = subprocess.Popen(
        command(ARGS),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=clean_env(tmp_path),
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        proc.stdout.close()
        with contextlib.suppress(BrokenPipeError):
            for _ in range(50):  # until the server notices and closes its stdin
                proc.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
                proc.stdin.flush()
                time.sleep(0.02)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
        assert proc.stderr is not None
        stderr = proc.stderr.read().decode("utf-8", "replace")
        proc.stderr.close()
    assert "Traceback" not in stderr


@pytest.mark.slow
def test_stdout_carried_only_protocol_messages(server: Server, faulty: Server) -> None:
    for s in (server, faulty):
        assert s.lines, "the shared servers answered the tests above"
        assert not s.violations
        for raw in s.lines:
            assert raw.endswith(b"\n") and raw.count(b"\n") == 1
            check_message(json.loads(raw.decode("utf-8")))
