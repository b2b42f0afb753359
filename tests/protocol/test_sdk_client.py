"""The official MCP Python SDK as the client of a real `handrail start` process.

One SDK session (stdio_client + ClientSession) runs once per module and records
what it got; the tests read the record. The SDK checks every tools/call result
against the tool's outputSchema itself, so a call that returns proves the
structured content conforms. Then our raw messages, taken straight off the pipe,
are held to the SDK's pydantic types, for every protocol version we speak.
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
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types.methods import parse_server_result

from tests.conftest import CORPUS, corpus_text
from tests.helpers.server import ROOT, Server

# served or walked workflows come from the WorkRail corpus
pytestmark = [pytest.mark.corpus, pytest.mark.slow]

LOOPS = CORPUS / "workflows" / "examples" / "loops"
ARGS = ("--no-bundled", "--workflows", str(LOOPS))
BATCH = "simple-batch-example"
KNOWN = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("workflow_list", {}),
    ("workflow_get", {"id": BATCH}),
    ("workflow_next", {"workflowId": BATCH, "completedSteps": []}),
    ("workflow_validate", {"workflowId": BATCH, "stepId": "load-data", "output": "Loaded the items."}),
    ("workflow_validate_json", {"workflow": corpus_text("workflows/examples/loops/simple-batch.json")}),
    ("workflow_get_schema", {}),
]


async def _session(folder: Path) -> dict[str, Any]:
    record: dict[str, Any] = {}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "handrail", "start", *ARGS],
        env={"HOME": str(folder), "PYTHONPATH": str(ROOT / "src")},
        cwd=folder,
    )
    with (folder / "stderr.log").open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            with anyio.fail_after(30):
                record["initialize"] = await session.initialize()
                record["ping"] = await session.send_ping()
                record["tools"] = await session.list_tools()
                record["calls"] = {name: await session.call_tool(name, args) for name, args in CALLS}
                record["not_found"] = await session.call_tool("workflow_get", {"id": "simple-batch"})
                record["bad_arguments"] = await session.call_tool("workflow_next", {"workflowId": BATCH})
                try:
                    await session.call_tool("workflow_delete", {})
                except MCPError as exc:
                    record["unknown_tool"] = exc
                record["resources"] = await session.list_resources()
                record["reads"] = {
                    r.uri: await session.read_resource(r.uri) for r in record["resources"].resources
                }
                try:
                    await session.read_resource("workflow://no-such-workflow")
                except MCPError as exc:
                    record["unknown_resource"] = exc
    return record


@pytest.fixture(scope="module")
def sdk() -> Iterator[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="handrail-sdk-") as folder:
        yield anyio.run(_session, Path(folder))


def test_sdk_initialize(sdk: dict[str, Any]) -> None:
    result: types.InitializeResult = sdk["initialize"]
    assert result.protocol_version == "2025-11-25"
    assert result.server_info.name == "workflowlookup"
    assert result.server_info.version
    assert result.capabilities.tools is not None and result.capabilities.resources is not None
    assert result.instructions is not None and f"{BATCH} (" in result.instructions
    assert isinstance(sdk["ping"], types.EmptyResult)


def test_sdk_lists_the_tools(sdk: dict[str, Any]) -> None:
    tools = sdk["tools"].tools
    run_tools = [
        "workflow_start",
        "workflow_continue",
        "workflow_resume",
        "workflow_abandon",
        "workflow_claim",
    ]
    assert [t.name for t in tools] == [name for name, _ in CALLS] + run_tools
    for tool in tools:
        assert tool.title and tool.description
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is not None
        writes = tool.name in ("workflow_start", "workflow_continue", "workflow_abandon", "workflow_claim")
        assert tool.annotations is not None and tool.annotations.read_only_hint is not writes


@pytest.mark.parametrize("name", [name for name, _ in CALLS])
def test_sdk_calls_every_tool(sdk: dict[str, Any], name: str) -> None:
    result: types.CallToolResult = sdk["calls"][name]
    assert result.is_error is False
    assert isinstance(result.structured_content, dict)
    [block] = result.content
    assert isinstance(block, types.TextContent)
    assert json.loads(block.text) == result.structured_content


def test_sdk_sees_failed_calls_as_error_results(sdk: dict[str, Any]) -> None:
    missing: types.CallToolResult = sdk["not_found"]
    assert missing.is_error is True
    assert missing.structured_content is not None
    assert missing.structured_content["code"] == -32001
    assert BATCH in missing.structured_content["data"]["didYouMean"]
    assert isinstance(missing.content[0], types.TextContent) and BATCH in missing.content[0].text
    bad: types.CallToolResult = sdk["bad_arguments"]
    assert bad.is_error is True and bad.structured_content is not None
    assert bad.structured_content["code"] == -32602
    assert "completedSteps" in bad.structured_content["data"]["details"]


def test_sdk_gets_protocol_errors_as_exceptions(sdk: dict[str, Any]) -> None:
    assert sdk["unknown_tool"].code == -32602
    assert "workflow_delete" in sdk["unknown_tool"].data["details"]
    # what an SDK user sees first is the message: it says what is wrong
    assert str(sdk["unknown_tool"]) == "Invalid params: unknown tool `workflow_delete`"
    assert sdk["unknown_resource"].code == -32002
    assert sdk["unknown_resource"].data == {"uri": "workflow://no-such-workflow"}
    assert str(sdk["unknown_resource"]) == "Resource not found: `workflow://no-such-workflow`"


def test_sdk_lists_and_reads_resources(sdk: dict[str, Any]) -> None:
    uris = {str(r.uri) for r in sdk["resources"].resources}
    assert f"workflow://{BATCH}" in uris and "workflow://schema" in uris
    for uri, read in sdk["reads"].items():
        [content] = read.contents
        assert isinstance(content, types.TextResourceContents)
        assert str(content.uri) == str(uri)
        document = json.loads(content.text)
        if str(uri) != "workflow://schema":
            assert content.mime_type == "application/json"
            assert f"workflow://{document['id']}" == str(uri)


# -- our raw messages against the SDK's types ----------------------------------------------


def _calls(server: Server) -> dict[str, dict[str, Any]]:
    results = {name: server.call(name, args) for name, args in CALLS}
    results["error"] = server.call("workflow_get", {"id": "simple-batch"})
    return results


@pytest.mark.parametrize("version", KNOWN)
def test_raw_results_match_the_sdk_types(version: str) -> None:
    with Server(*ARGS) as server:
        initialized = server.initialize(version)
        types.InitializeResult.model_validate(initialized)
        assert parse_server_result("initialize", version, initialized).protocol_version == version  # type: ignore[attr-defined]

        listed = server.result("tools/list")
        types.ListToolsResult.model_validate(listed)
        parse_server_result("tools/list", version, listed)
        for tool in listed["tools"]:
            types.Tool.model_validate(tool)

        for name, result in _calls(server).items():
            parsed = types.CallToolResult.model_validate(result)
            assert parsed.is_error is (name == "error")
            parse_server_result("tools/call", version, result)

        resources = server.result("resources/list")
        types.ListResourcesResult.model_validate(resources)
        parse_server_result("resources/list", version, resources)
        for entry in resources["resources"]:
            read = server.result("resources/read", {"uri": entry["uri"]})
            types.ReadResourceResult.model_validate(read)
            parse_server_result("resources/read", version, read)

        templates = server.result("resources/templates/list")
        parse_server_result("resources/templates/list", version, templates)
        parse_server_result("ping", version, server.result("ping"))


def test_raw_envelopes_match_the_sdk_types() -> None:
    with Server(*ARGS) as server:
        responses = [
            server.request("ping"),
            server.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}),
            server.request("tools/list"),
        ]
        errors = [
            server.request("no/such/method"),
            server.request("initialize", {"protocolVersion": "1999-01-01", "capabilities": {}}),
            server.request("tools/call", {"name": "nope"}),
            server.request("workflow_get", {"id": "no-such-workflow"}),
            server.request("resources/read", {"uri": "workflow://no-such-workflow"}),
        ]
        for raw in (b"{oops\n", b"[]\n", b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}\n'):
            server.send_raw(raw)
            errors.append(server.recv())
        for reply in responses:
            types.JSONRPCResponse.model_validate(reply)
        for reply in errors:
            parsed = types.JSONRPCError.model_validate(reply)
            assert parsed.error.code == reply["error"]["code"]
            assert parsed.error.data == reply["error"].get("data")
