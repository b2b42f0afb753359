"""The 2026-07-28 revision beside the handshake era, on stdio and over HTTP.

No `initialize`: `server/discover` and every request carry the per-request `_meta`
envelope (protocol version, client capabilities, client info). Results carry
`resultType`, listings the cache hints (`ttlMs`, `cacheScope`), and every result
the server's identity in `_meta`. Every 2026 result is held to the SDK's
2026-07-28 wire types, every request we send to its request types. Handshake-era
requests are answered exactly as before, on the same process. Last, the official
SDK client, left in its default `auto` mode, negotiates the 2026 revision with
`handrail start` and `handrail serve`, and `mode="legacy"` still gets the handshake.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import UnsupportedProtocolVersionErrorData
from mcp_types.methods import parse_server_result, validate_client_request

from tests.conftest import CORPUS
from tests.helpers.http import (
    CLIENT_CAPABILITIES_KEY,
    MODERN,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
    HttpServer,
    envelope,
    modern_headers,
    modern_request,
)
from tests.helpers.server import LATEST, ROOT, Server

pytestmark = pytest.mark.slow

LOOPS = CORPUS / "workflows" / "examples" / "loops"
ARGS = ("--no-bundled", "--workflows", str(LOOPS))
BATCH = "simple-batch-example"
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
CACHEABLE = {
    "server/discover",
    "tools/list",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
}
REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("server/discover", {}),
    ("tools/list", {}),
    ("tools/call", {"name": "workflow_list", "arguments": {}}),
    ("tools/call", {"name": "workflow_next", "arguments": {"workflowId": BATCH, "completedSteps": []}}),
    ("tools/call", {"name": "workflow_get", "arguments": {"id": "simple-batch"}}),  # an isError result
    ("resources/list", {}),
    ("resources/read", {"uri": f"workflow://{BATCH}"}),
    ("resources/read", {"uri": "workflow://schema"}),
    ("resources/templates/list", {}),
    ("prompts/list", {}),
    ("prompts/get", {"name": BATCH}),
]


@pytest.fixture
def fresh() -> Iterator[Server]:
    """A `handrail start` process nobody has initialized."""
    with Server(*ARGS) as s:
        yield s


@pytest.fixture(scope="module")
def http() -> Iterator[HttpServer]:
    with HttpServer(*ARGS) as server:
        yield server


def modern(server: Server, method: str, params: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    """One 2026-07-28 request over stdio; its whole response."""
    message = modern_request(method, params, rid=server.new_id())
    message["params"]["_meta"].update(meta)
    server.send(message)
    return server.response(message["id"])


def check_modern_result(method: str, result: dict[str, Any]) -> None:
    """`result` is a well-formed 2026-07-28 result of `method`."""
    parse_server_result(method, MODERN, result)
    assert result["resultType"] == "complete"
    assert result["_meta"][SERVER_INFO_KEY]["name"] == "workflowlookup"
    if method in CACHEABLE:
        assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0
        assert result["cacheScope"] in ("public", "private")
    else:
        assert "ttlMs" not in result and "cacheScope" not in result


@pytest.mark.parametrize(("method", "params"), REQUESTS, ids=[m for m, _ in REQUESTS])
def test_our_requests_are_well_formed(method: str, params: dict[str, Any]) -> None:
    validate_client_request(method, MODERN, modern_request(method, params)["params"])


# -- stdio, raw lines ------------------------------------------------------------------------------


@pytest.mark.corpus
def test_discover_before_anything(fresh: Server) -> None:
    reply = modern(fresh, "server/discover")
    result = reply["result"]
    check_modern_result("server/discover", result)
    discovered = types.DiscoverResult.model_validate(result)
    assert discovered.supported_versions == [MODERN]
    capabilities = result["capabilities"]
    assert set(capabilities) == {"tools", "resources", "prompts", "completions"}
    assert f"{BATCH} (" in result["instructions"]
    assert "workflow_next" in result["instructions"]


@pytest.mark.corpus
def test_every_request_stands_alone_without_initialize(fresh: Server) -> None:
    for method, params in REQUESTS:
        reply = modern(fresh, method, params)
        assert "result" in reply, (method, reply)
        check_modern_result(method, reply["result"])
    listed = modern(fresh, "tools/list")["result"]
    assert [t["name"] for t in listed["tools"]] == TOOLS
    called = modern(fresh, "tools/call", {"name": "workflow_get", "arguments": {"id": "simple-batch"}})[
        "result"
    ]
    assert called["isError"] is True and called["structuredContent"]["code"] == -32001
    # and the handshake era on the same process still waits for initialize
    assert fresh.error("tools/list")["code"] == -32000


@pytest.mark.corpus
def test_tools_call_answers_as_in_the_handshake_era(fresh: Server) -> None:
    fresh.initialize()
    for name, arguments in [
        ("workflow_next", {"workflowId": BATCH, "completedSteps": []}),
        ("workflow_validate", {"workflowId": BATCH, "stepId": "load-data", "output": "Loaded the items."}),
        ("workflow_get", {"id": "nope-nope"}),
    ]:
        params = {"name": name, "arguments": arguments}
        old = fresh.result("tools/call", params)
        new = modern(fresh, "tools/call", params)["result"]
        assert {k: v for k, v in new.items() if k not in ("resultType", "_meta")} == old


def test_unknown_version_is_32022_with_the_supported_list(fresh: Server) -> None:
    for version in ("2099-01-01", "2025-11-25", "2024-11-05", "draft", ""):
        reply = modern(fresh, "tools/list", **{PROTOCOL_VERSION_KEY: version})
        error = reply["error"]
        assert error["code"] == -32022 and error["message"] == "Unsupported protocol version"
        data = UnsupportedProtocolVersionErrorData.model_validate(error["data"])
        assert data.supported == [MODERN] and data.requested == version
        types.JSONRPCError.model_validate(reply)


def test_malformed_envelopes_are_invalid_params(fresh: Server) -> None:
    for meta, detail in [
        ({PROTOCOL_VERSION_KEY: MODERN}, CLIENT_CAPABILITIES_KEY),
        ({PROTOCOL_VERSION_KEY: 20260728, CLIENT_CAPABILITIES_KEY: {}}, "must be a string"),
        ({PROTOCOL_VERSION_KEY: None, CLIENT_CAPABILITIES_KEY: {}}, "must be a string"),
        ({PROTOCOL_VERSION_KEY: MODERN, CLIENT_CAPABILITIES_KEY: []}, "must be an object"),
        (envelope(**{"io.modelcontextprotocol/clientInfo": "me"}), "must be an object"),
    ]:
        rid = fresh.new_id()
        fresh.send({"jsonrpc": "2.0", "id": rid, "method": "tools/list", "params": {"_meta": meta}})
        error = fresh.response(rid)["error"]
        assert error["code"] == -32602 and detail in error["data"]["details"], meta


def test_methods_the_revision_does_not_have(fresh: Server) -> None:
    for method in ("ping", "shutdown", "workflow_list", "no/such/method", "logging/setLevel"):
        error = modern(fresh, method)["error"]
        assert error["code"] == -32601 and error["data"] == {"method": method}
    assert fresh.proc.poll() is None  # `shutdown` did not stop it


def test_unknown_resource_is_invalid_params_from_2026_on(fresh: Server) -> None:
    error = modern(fresh, "resources/read", {"uri": "workflow://nope"})["error"]
    assert error["code"] == -32602 and error["data"] == {"uri": "workflow://nope"}
    fresh.initialize()
    assert fresh.error("resources/read", {"uri": "workflow://nope"})["code"] == -32002


def test_initialize_is_always_the_handshake(fresh: Server) -> None:
    params = {"protocolVersion": MODERN, "capabilities": {}, "_meta": envelope()}
    result = fresh.result("initialize", params)
    assert result["protocolVersion"] == LATEST and "resultType" not in result


@pytest.mark.corpus
def test_handshake_era_results_are_unchanged(fresh: Server) -> None:
    """No resultType, no cache hints, no serverInfo stamp: what these clients always got."""
    fresh.initialize()
    for method, params in REQUESTS[1:]:
        result = fresh.result(method, params)
        assert not {"resultType", "ttlMs", "cacheScope", "_meta"} & set(result), method
    # a `_meta` without the protocol-version key is the handshake era's (progress tokens)
    result = fresh.result("tools/list", {"_meta": {"progressToken": 5}})
    assert "resultType" not in result
    assert fresh.result("ping", {"_meta": {"progressToken": 6}}) == {}


def test_discover_without_an_envelope_is_answered(fresh: Server) -> None:
    result = fresh.result("server/discover")
    check_modern_result("server/discover", result)
    fresh.initialize()
    assert fresh.result("server/discover", {})["supportedVersions"] == [MODERN]


def test_modern_requests_in_a_batch(fresh: Server) -> None:
    fresh.send([modern_request("tools/list", rid="m1"), {"jsonrpc": "2.0", "id": "p", "method": "ping"}])
    replies = fresh.recv()
    assert [r["id"] for r in replies] == ["m1", "p"]
    check_modern_result("tools/list", replies[0]["result"])
    assert replies[1]["result"] == {}


# -- HTTP ------------------------------------------------------------------------------------------


@pytest.mark.corpus
@pytest.mark.parametrize(("method", "params"), REQUESTS, ids=[m for m, _ in REQUESTS])
def test_http_answers_2026_requests(http: HttpServer, method: str, params: dict[str, Any]) -> None:
    response = http.modern(method, params)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    check_modern_result(method, response.json()["result"])


def test_http_2026_error_statuses(http: HttpServer) -> None:
    cases = [
        ("no/such/method", {}, 404, -32601),
        ("ping", {}, 404, -32601),
        ("resources/read", {"uri": "workflow://nope"}, 400, -32602),
        ("prompts/get", {"name": "nope-nope"}, 400, -32602),
        ("tools/call", {"name": "nope"}, 400, -32602),
    ]
    for method, params, status, code in cases:
        response = http.modern(method, params, rid="e")
        assert response.status_code == status, method
        assert response.json()["error"]["code"] == code and response.json()["id"] == "e"


def test_http_unknown_version_is_400_with_32022(http: HttpServer) -> None:
    message = modern_request("tools/list", rid=9)
    message["params"]["_meta"][PROTOCOL_VERSION_KEY] = "2099-01-01"
    response = http.post(message, modern_headers(message))
    assert response.status_code == 400
    reply = response.json()
    assert reply["id"] == 9 and reply["error"]["code"] == -32022
    assert reply["error"]["data"] == {"supported": [MODERN], "requested": "2099-01-01"}


def test_http_headers_must_match_the_body(http: HttpServer) -> None:
    message = modern_request("tools/call", {"name": "workflow_list", "arguments": {}}, rid=3)
    good = modern_headers(message)
    assert http.post(message, good).status_code == 200
    for change in [
        {"MCP-Protocol-Version": LATEST},
        {"Mcp-Method": "tools/list"},
        {"Mcp-Name": "workflow_get"},
    ]:
        response = http.post(message, {**good, **change})
        assert response.status_code == 400, change
        reply = response.json()
        assert reply["id"] == 3 and reply["error"]["code"] == -32020
    for missing in ("MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"):
        headers = {k: v for k, v in good.items() if k != missing}
        assert http.post(message, headers).json()["error"]["code"] == -32020, missing


@pytest.mark.corpus
def test_http_mcp_name_may_be_base64(http: HttpServer) -> None:
    message = modern_request("prompts/get", {"name": BATCH}, rid=4)
    headers = {**modern_headers(message), "Mcp-Name": "=?base64?c2ltcGxlLWJhdGNoLWV4YW1wbGU=?="}
    assert http.post(message, headers).status_code == 200
    headers["Mcp-Name"] = "=?base64?!!!?="
    assert http.post(message, headers).json()["error"]["code"] == -32020


def test_http_2026_header_needs_the_envelope(http: HttpServer) -> None:
    response = http.post(
        {"jsonrpc": "2.0", "id": 5, "method": "tools/list"},
        {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"},
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32602


def test_http_discover_answers_like_stdio(http: HttpServer, fresh: Server) -> None:
    message = modern_request("server/discover", rid="d")
    fresh.send(message)
    assert http.post(message, modern_headers(message)).json() == fresh.response("d")


# -- the SDK client: auto mode picks 2026-07-28, legacy mode the handshake -------------------------


async def _client_session(target: Any, mode: str) -> dict[str, Any]:
    record: dict[str, Any] = {}
    async with Client(target, mode=mode) as client:
        with anyio.fail_after(30):
            record["version"] = client.protocol_version
            record["server_info"] = client.server_info
            record["capabilities"] = client.server_capabilities
            record["instructions"] = client.instructions
            record["tools"] = await client.list_tools()
            record["calls"] = {name: await client.call_tool(name, {}) for name in ("workflow_list",)}
            record["next"] = await client.call_tool(
                "workflow_next", {"workflowId": BATCH, "completedSteps": []}
            )
            record["resources"] = await client.list_resources()
            record["read"] = await client.read_resource(f"workflow://{BATCH}")
            record["prompts"] = await client.list_prompts()
            record["prompt"] = await client.get_prompt(BATCH)
            try:
                await client.read_resource("workflow://nope")
            except MCPError as exc:
                record["missing"] = exc
    return record


def _stdio(folder: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "handrail", "start", *ARGS],
        env={"HOME": str(folder), "PYTHONPATH": str(ROOT / "src")},
        cwd=folder,
    )


@pytest.fixture(scope="module")
def sessions(http: HttpServer) -> Iterator[dict[tuple[str, str], dict[str, Any]]]:
    with tempfile.TemporaryDirectory(prefix="handrail-modern-") as folder:
        record = {}
        for mode in ("auto", "legacy"):
            record["stdio", mode] = anyio.run(_client_session, _stdio(Path(folder)), mode)
            record["http", mode] = anyio.run(_client_session, http.url, mode)
        yield record


@pytest.mark.corpus
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize(("mode", "version"), [("auto", MODERN), ("legacy", LATEST)])
def test_sdk_client_negotiates(
    sessions: dict[tuple[str, str], dict[str, Any]], transport: str, mode: str, version: str
) -> None:
    record = sessions[transport, mode]
    assert record["version"] == version
    assert record["server_info"] is not None and record["server_info"].name == "workflowlookup"
    assert record["capabilities"].prompts is not None
    assert record["instructions"] is not None and f"{BATCH} (" in record["instructions"]
    assert [t.name for t in record["tools"].tools] == TOOLS
    listed: types.CallToolResult = record["calls"]["workflow_list"]
    assert listed.is_error is False and listed.structured_content is not None
    assert BATCH in {w["id"] for w in listed.structured_content["workflows"]}
    step: types.CallToolResult = record["next"]
    assert step.is_error is False and step.structured_content is not None
    assert step.structured_content["step"]["id"] == "load-data"
    assert f"workflow://{BATCH}" in {str(r.uri) for r in record["resources"].resources}
    [content] = record["read"].contents
    assert json.loads(content.text)["id"] == BATCH
    assert BATCH in {p.name for p in record["prompts"].prompts}
    assert BATCH in record["prompt"].messages[0].content.text
    assert record["missing"].code == (-32602 if version == MODERN else -32002)
