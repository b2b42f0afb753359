"""The default workspace of runs is the client's first MCP root: the server asks for
the roots (a server -> client `roots/list` request) once the client is ready."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from handrail.protocol.client_requests import MAX_PENDING, ClientRequests
from tests.helpers.server import ROOT, Server
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

pytestmark = pytest.mark.slow


async def _session(tmp: Path, root: Path) -> dict[str, Any]:
    record: dict[str, Any] = {"asked": 0}
    answered = anyio.Event()

    async def list_roots(context: Any) -> types.ListRootsResult:
        record["asked"] += 1
        answered.set()
        return types.ListRootsResult(roots=[types.Root(uri=root.as_uri(), name="project")])

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "handrail", "start", "--no-bundled", "--workflows", str(tmp / "flows")],
        env={"HOME": str(tmp), "HANDRAIL_HOME": str(tmp / "handrail-home"), "PYTHONPATH": str(ROOT / "src")},
        cwd=tmp,
    )
    with (tmp / "stderr.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, list_roots_callback=list_roots) as session,
        ):
            with anyio.fail_after(30):
                await session.initialize()
                await answered.wait()
                await anyio.sleep(0.2)  # let the answer reach the server before the next call
                await session.send_ping()
                started = await session.call_tool(
                    "workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Rooted"}
                )
                record["started"] = started.structured_content
                listed = await session.call_tool("workflow_resume", {})
                record["listed"] = listed.structured_content
    return record


def test_a_run_started_without_a_workspace_works_in_the_clients_first_root(tmp_path: Path) -> None:
    write(tmp_path / "flows", build_feature())
    root = tmp_path / "project"
    root.mkdir()
    record = anyio.run(_session, tmp_path, root)
    assert record["asked"] == 1
    [run] = record["listed"]["runs"]
    assert run["runId"] == record["started"]["runId"]
    assert run["workspace"] == str(root)


def test_a_client_without_roots_is_never_sent_a_request(tmp_path: Path) -> None:
    write(tmp_path / "flows", build_feature())
    with Server("--no-bundled", "--workflows", str(tmp_path / "flows")) as server:
        server.initialize()  # declares no capabilities; the driver fails on any request from the server
        started = server.result("workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Here"})
        listed = server.result("workflow_resume", {})
        assert [r["runId"] for r in listed["runs"]] == [started["runId"]]
        assert listed["runs"][0]["workspace"] == str(server.folder)


def test_client_requests_route_answers_to_their_callbacks_and_stay_bounded() -> None:
    requests = ClientRequests()
    got: list[Any] = []
    rid = requests.send("roots/list", None, lambda result, error: got.append((result, error)))
    assert requests.take_outgoing() == [{"jsonrpc": "2.0", "id": rid, "method": "roots/list"}]
    assert requests.take_outgoing() == []
    assert requests.resolve({"jsonrpc": "2.0", "id": 7, "result": {}}) is False  # not ours
    assert requests.resolve({"jsonrpc": "2.0", "id": rid, "result": {"roots": []}}) is True
    assert got == [({"roots": []}, None)]
    assert requests.resolve({"jsonrpc": "2.0", "id": rid, "result": {}}) is False  # answered once
    for _ in range(MAX_PENDING * 3):
        requests.send("ping", None, lambda result, error: None)
    assert len(requests.take_outgoing()) == MAX_PENDING
