"""`handrail serve`: the Streamable HTTP transport, as a real process on a free port.

The official SDK's Streamable HTTP client runs a whole session against it (the
SDK checks every tools/call result against the tool's outputSchema itself). Raw
httpx calls then hold the HTTP layer to its rules: Host and Origin allow-lists,
the bearer token, 405 for GET, the MCP-Protocol-Version header, 202 for
notifications, batches, limits, /healthz. Last, the same requests sent to
`handrail start` over stdio and to `handrail serve` over HTTP get the same answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.conftest import CORPUS, corpus_text
from tests.helpers.http import MODERN, HttpServer, modern_headers, modern_request
from tests.helpers.server import LATEST, Server

LOOPS = CORPUS / "workflows" / "examples" / "loops"
ARGS = ("--no-bundled", "--workflows", str(LOOPS))
BATCH = "simple-batch-example"
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("workflow_list", {}),
    ("workflow_get", {"id": BATCH}),
    ("workflow_next", {"workflowId": BATCH, "completedSteps": []}),
    ("workflow_validate", {"workflowId": BATCH, "stepId": "load-data", "output": "Loaded the items."}),
    ("workflow_validate_json", {"workflow": corpus_text("workflows/examples/loops/simple-batch.json")}),
    ("workflow_get_schema", {}),
]
INITIALIZE = {"protocolVersion": LATEST, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


@pytest.fixture(scope="module")
def http() -> Iterator[HttpServer]:
    with HttpServer(*ARGS) as server:
        yield server


# -- the SDK's Streamable HTTP client ----------------------------------------------------------


async def _session(url: str) -> dict[str, Any]:
    record: dict[str, Any] = {}
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        with anyio.fail_after(30):
            record["initialize"] = await session.initialize()
            record["ping"] = await session.send_ping()
            record["tools"] = await session.list_tools()
            record["calls"] = {name: await session.call_tool(name, args) for name, args in CALLS}
            record["not_found"] = await session.call_tool("workflow_get", {"id": "simple-batch"})
            try:
                await session.call_tool("workflow_delete", {})
            except MCPError as exc:
                record["unknown_tool"] = exc
            record["resources"] = await session.list_resources()
            record["reads"] = {
                str(r.uri): await session.read_resource(r.uri) for r in record["resources"].resources
            }
            record["prompts"] = await session.list_prompts()
            record["prompt"] = await session.get_prompt(BATCH)
    return record


@pytest.fixture(scope="module")
def sdk(http: HttpServer) -> dict[str, Any]:
    return anyio.run(_session, http.url)


@pytest.mark.slow
@pytest.mark.corpus
def test_sdk_initializes_over_http(sdk: dict[str, Any]) -> None:
    result: types.InitializeResult = sdk["initialize"]
    assert result.protocol_version == LATEST
    assert result.server_info.name == "workflowlookup"
    capabilities = result.capabilities
    assert capabilities.tools is not None and capabilities.resources is not None
    assert capabilities.prompts is not None
    assert result.instructions is not None and f"{BATCH} (" in result.instructions
    assert isinstance(sdk["ping"], types.EmptyResult)


@pytest.mark.corpus
def test_sdk_lists_and_calls_every_tool_over_http(sdk: dict[str, Any]) -> None:
    run_tools = [
        "workflow_start",
        "workflow_continue",
        "workflow_resume",
        "workflow_abandon",
        "workflow_claim",
    ]
    assert [t.name for t in sdk["tools"].tools] == [name for name, _ in CALLS] + run_tools
    for name, _ in CALLS:
        result: types.CallToolResult = sdk["calls"][name]
        assert result.is_error is False, name
        [block] = result.content
        assert isinstance(block, types.TextContent)
        assert json.loads(block.text) == result.structured_content
    missing: types.CallToolResult = sdk["not_found"]
    assert missing.is_error is True and missing.structured_content is not None
    assert missing.structured_content["code"] == -32001
    assert sdk["unknown_tool"].code == -32602


@pytest.mark.corpus
def test_sdk_lists_and_reads_resources_over_http(sdk: dict[str, Any]) -> None:
    uris = {str(r.uri) for r in sdk["resources"].resources}
    assert f"workflow://{BATCH}" in uris and "workflow://schema" in uris
    assert set(sdk["reads"]) == uris
    for uri, read in sdk["reads"].items():
        [content] = read.contents
        assert isinstance(content, types.TextResourceContents) and str(content.uri) == uri
        json.loads(content.text)


@pytest.mark.corpus
def test_sdk_lists_and_gets_prompts_over_http(sdk: dict[str, Any]) -> None:
    names = [p.name for p in sdk["prompts"].prompts]
    assert BATCH in names and len(names) == 4
    prompt: types.GetPromptResult = sdk["prompt"]
    [message] = prompt.messages
    assert message.role == "user" and isinstance(message.content, types.TextContent)
    assert f'"workflowId":"{BATCH}"' in message.content.text


# -- the HTTP layer, raw ----------------------------------------------------------------------


@pytest.mark.corpus
def test_healthz(http: HttpServer) -> None:
    response = http.client.get(f"{http.base}/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok" and body["workflows"] == 4 and body["problems"] == 0


@pytest.mark.corpus
def test_post_answers_with_json(http: HttpServer) -> None:
    response = http.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert "mcp-session-id" not in response.headers  # stateless: no sessions
    assert len(response.json()["result"]["tools"]) == len(CALLS) + 5  # and the 5 run tools


@pytest.mark.corpus
def test_no_initialize_needed(http: HttpServer) -> None:
    """Stateless: a request stands alone, initialize or not."""
    reply = http.rpc(
        "tools/call", {"name": "workflow_next", "arguments": {"workflowId": BATCH, "completedSteps": []}}
    )
    assert reply["result"]["isError"] is False
    assert http.rpc("initialize", INITIALIZE)["result"]["protocolVersion"] == LATEST


@pytest.mark.parametrize(
    "host", ["evil.example.com", "evil.example.com:8765", "127.0.0.2", "localhost.evil.com"]
)
def test_bad_host_is_403(http: HttpServer, host: str) -> None:
    response = http.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"Host": host})
    assert response.status_code == 403
    refused = host.split(":")[0]
    assert response.json()["error"]["message"] == (
        f"Forbidden: Host `{refused}` not allowed (a server allows it with --allow-host)"
    )


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]"])
def test_local_hosts_are_allowed(http: HttpServer, host: str) -> None:
    response = http.post(
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"Host": f"{host}:{http.port}", "Origin": f"http://{host}:{http.port}"},
    )
    assert response.status_code == 200 and response.json()["result"] == {}


@pytest.mark.parametrize(
    "origin", ["http://evil.example.com", "https://evil.example.com:443", "null", "file://"]
)
def test_bad_origin_is_403(http: HttpServer, origin: str) -> None:
    response = http.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"Origin": origin})
    assert response.status_code == 403
    assert response.json()["error"]["message"] == (
        f"Forbidden: Origin `{origin}` not allowed (a server allows it with --allow-origin)"
    )


def test_get_and_delete_are_405(http: HttpServer) -> None:
    for method in ("GET", "DELETE"):
        response = http.client.request(method, http.url, headers={"Accept": "text/event-stream"})
        assert response.status_code == 405, method
        assert response.headers["allow"] == "POST"


@pytest.mark.slow
def test_bearer_token(tmp_path: Path) -> None:
    with HttpServer(*ARGS, env={"HANDRAIL_TOKEN": "s3cret"}) as server:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
            response = server.post(ping, headers)
            assert response.status_code == 401, headers
            assert response.headers["www-authenticate"].startswith("Bearer")
        response = server.post(ping, {"Authorization": "Bearer s3cret"})
        assert response.status_code == 200 and response.json()["result"] == {}
        assert server.client.get(f"{server.base}/healthz").status_code == 200
        # a bad Host is refused before the token is asked for
        assert server.post(ping, {"Host": "evil.example.com"}).status_code == 403


@pytest.mark.parametrize("version", ["1999-01-01", "2025-13-01", "latest", "2026-7-28", "2027-01-01", ""])
def test_bad_protocol_version_header_is_400(http: HttpServer, version: str) -> None:
    response = http.post(
        {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, {"MCP-Protocol-Version": version}
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["data"]["requestedVersion"] == version
    assert MODERN in error["data"]["supportedVersions"] and LATEST in error["data"]["supportedVersions"]
    assert response.json()["id"] == 7


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_known_protocol_version_headers_are_served(http: HttpServer, version: str) -> None:
    response = http.post(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"MCP-Protocol-Version": version}
    )
    assert response.status_code == 200 and "tools" in response.json()["result"]


def test_the_2026_header_is_served_with_its_envelope(http: HttpServer) -> None:
    message = modern_request("tools/list")
    response = http.post(message, modern_headers(message))
    assert response.status_code == 200
    assert response.json()["result"]["resultType"] == "complete"


def test_notifications_and_client_responses_are_202(http: HttpServer) -> None:
    for message, headers in [
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, {}),
        ({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}, {}),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, {"MCP-Protocol-Version": LATEST}),
        ({"jsonrpc": "2.0", "method": "notifications/cancelled"}, {"MCP-Protocol-Version": MODERN}),
        ({"jsonrpc": "2.0", "id": "answer", "result": {}}, {}),
    ]:
        response = http.post(message, headers)
        assert response.status_code == 202, message
        assert response.content == b""
    response = http.post({"jsonrpc": "2.0", "method": "x"}, {"MCP-Protocol-Version": "1999-01-01"})
    assert response.status_code == 400


def test_accept_and_content_type(http: HttpServer) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for accept in ("text/html", "text/event-stream", "application/json;q=0"):
        assert http.post(ping, {"Accept": accept}).status_code == 406, accept
    for accept in ("application/json", "*/*", "application/*", "text/event-stream, application/json;q=0.5"):
        assert http.post(ping, {"Accept": accept}).status_code == 200, accept
    for content_type in ("text/plain", "application/x-www-form-urlencoded"):
        assert http.post(ping, {"Content-Type": content_type}).status_code == 415
    assert http.post(ping, {"Content-Type": "application/json; charset=utf-8"}).status_code == 200


def test_unparsable_body_is_400(http: HttpServer) -> None:
    for body in (b"{oops", b"", b"\xff\xfe"):
        response = http.post(body, raw=True)
        assert response.status_code == 400
        reply = response.json()
        assert reply["id"] is None and reply["error"]["code"] == -32700


def test_invalid_request_is_400(http: HttpServer) -> None:
    for message in (42, "ping", {"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, []):
        response = http.post(message)
        assert response.status_code == 400, message
        assert response.json()["error"]["code"] == -32600


def test_rpc_errors_of_the_handshake_era_are_200(http: HttpServer) -> None:
    response = http.post({"jsonrpc": "2.0", "id": 3, "method": "no/such/method"})
    assert response.status_code == 200 and response.json()["error"]["code"] == -32601
    response = http.post(
        {"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "workflow://x"}}
    )
    assert response.status_code == 200 and response.json()["error"]["code"] == -32002


def test_body_limit_is_413(http: HttpServer) -> None:
    big = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * (4 * 1024 * 1024)}}
    response = http.post(big)
    assert response.status_code == 413
    assert response.json()["error"]["data"]["limit"] == 4 * 1024 * 1024
    assert http.rpc("ping")["result"] == {}


def test_batches(http: HttpServer) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": "a", "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "b", "method": "no/such"},
    ]
    for headers in ({}, {"MCP-Protocol-Version": "2025-03-26"}, {"MCP-Protocol-Version": "2024-11-05"}):
        response = http.post(batch, headers)
        assert response.status_code == 200
        assert [r["id"] for r in response.json()] == ["a", "b"]
    assert http.post([{"jsonrpc": "2.0", "method": "notifications/initialized"}]).status_code == 202
    for version in ("2025-06-18", "2025-11-25", MODERN):
        response = http.post(batch, {"MCP-Protocol-Version": version})
        assert response.status_code == 400, version
        assert response.json()["error"]["code"] == -32600


@pytest.mark.slow
def test_server_exits_cleanly_on_sigterm() -> None:
    server = HttpServer(*ARGS)
    assert server.close() == 0


# -- the same answers on both transports -------------------------------------------------------

SAME: list[tuple[str, Any]] = [
    ("tools/list", {}),
    *[("tools/call", {"name": name, "arguments": args}) for name, args in CALLS],
    ("tools/call", {"name": "workflow_get", "arguments": {"id": "simple-batch"}}),
    ("tools/call", {"name": "workflow_next", "arguments": {"workflowId": BATCH}}),
    ("tools/call", {"name": "nope"}),
    ("resources/list", {}),
    ("resources/read", {"uri": f"workflow://{BATCH}"}),
    ("resources/read", {"uri": "workflow://schema"}),
    ("resources/read", {"uri": "workflow://nope"}),
    ("resources/templates/list", None),
    ("prompts/list", {}),
    ("prompts/get", {"name": BATCH}),
    ("prompts/get", {"name": "simple-batch"}),
    ("workflow_list", None),
    ("workflow_get", {"id": BATCH}),
    ("no/such/method", {}),
    ("ping", None),
    ("server/discover", {}),
    ("tools/list", [1]),
]
MODERN_SAME: list[tuple[str, Any]] = [
    ("server/discover", {}),
    ("tools/list", {}),
    ("tools/call", {"name": "workflow_next", "arguments": {"workflowId": BATCH, "completedSteps": []}}),
    ("resources/list", {}),
    ("resources/read", {"uri": f"workflow://{BATCH}"}),
    ("resources/read", {"uri": "workflow://nope"}),
    ("prompts/list", {}),
    ("prompts/get", {"name": BATCH}),
    ("ping", {}),
]


@pytest.mark.slow
@pytest.mark.corpus
def test_both_transports_give_the_same_answers(http: HttpServer) -> None:
    with Server(*ARGS) as stdio:
        stdio.initialize()
        http_init = http.rpc("initialize", INITIALIZE, rid="init")
        stdio_init = stdio.request("initialize", INITIALIZE, rid="init")
        # the one difference: subscriptions need a session to send updates on (stdio has one)
        assert http_init["result"]["capabilities"]["resources"].pop("subscribe") is False
        assert stdio_init["result"]["capabilities"]["resources"].pop("subscribe") is True
        assert http_init == stdio_init
        for n, (method, params) in enumerate(SAME):
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": n, "method": method}
            if params is not None:
                message["params"] = params
            stdio.send(message)
            assert http.post(message).json() == stdio.response(n), message
        for n, (method, params) in enumerate(MODERN_SAME, start=1000):
            message = modern_request(method, params, rid=n)
            stdio.send(message)
            assert http.post(message, modern_headers(message)).json() == stdio.response(n), message
