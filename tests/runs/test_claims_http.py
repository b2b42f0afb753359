"""workflow_claim over `handrail serve` (Streamable HTTP): an agent session is its
connection, or the Mcp-Session-Id header it sends; claims through tools/call in both
protocol generations; another connection is refused the branch while the lease lives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from handrail.compiler import compile_text
from handrail.store import open_store
from tests.helpers.branches import write_branches
from tests.helpers.http import HttpServer, envelope, modern_headers
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

pytestmark = pytest.mark.slow

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[HttpServer, str]]:
    write(tmp_path / "flows", build_feature())
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with HttpServer("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", url) as server:
        yield server, url


def call(client: httpx.Client, server: HttpServer, name: str, args: dict[str, Any], **headers: str) -> Any:
    """tools/call of the 2025 generation: the tool's structured result, or `{"error": ...}`."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}}
    result = client.post(server.url, json=body, headers=HEADERS | headers).json()["result"]
    if result["isError"]:
        return {"error": result["structuredContent"]}
    return result["structuredContent"]


def fan_out(client: httpx.Client, server: HttpServer, url: str, folder: Path, count: int) -> str:
    started = call(client, server, "workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Fan out",
                   "workspace": str(folder), "context": {"parts": ["x"]}})  # fmt: skip
    store = open_store(url)
    try:
        parent = store.get(started["runId"])
        assert parent is not None
        workflow = compile_text(store.get_source(parent.source_hash).decode(), "<source>").workflow  # type: ignore[union-attr]
        assert workflow is not None
        write_branches(store, parent, workflow, [f"f{i}.py" for i in range(count)])
    finally:
        store.close()
    return str(started["runId"])


def test_two_connections_are_two_agents_and_one_is_refused_the_others_branch(
    served: tuple[HttpServer, str], tmp_path: Path
) -> None:
    server, url = served
    with httpx.Client(timeout=15) as one, httpx.Client(timeout=15) as two:
        parent = fan_out(one, server, url, tmp_path, 3)
        mine = call(one, server, "workflow_claim", {"runId": parent})
        theirs = call(two, server, "workflow_claim", {"runId": parent})
        assert mine["claimed"] and theirs["claimed"] and (mine["branch"], theirs["branch"]) == (0, 1)
        refused = call(two, server, "workflow_continue",
                       {"runId": mine["runId"], "stepId": "plan", "output": "Plan: mine."})  # fmt: skip
        assert refused["error"]["code"] == -32013
        assert refused["error"]["data"]["holderKind"] == "http-connection"
        accepted = call(one, server, "workflow_continue",
                        {"runId": mine["runId"], "stepId": "plan", "output": "Plan: mine."})  # fmt: skip
        assert accepted["accepted"] is True and accepted["step"]["id"] == "build"
        # the 2026-07-28 generation: the third branch, for a third connection
        params = {"name": "workflow_claim", "arguments": {"runId": parent}, "_meta": envelope()}
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        with httpx.Client(timeout=15) as three:
            answer = three.post(server.url, json=message, headers=HEADERS | modern_headers(message)).json()
        assert answer["result"]["structuredContent"]["branch"] == 2, answer


def test_an_mcp_session_id_header_keeps_the_agent_across_connections(
    served: tuple[HttpServer, str], tmp_path: Path
) -> None:
    server, url = served
    with httpx.Client(timeout=15) as setup:
        parent = fan_out(setup, server, url, tmp_path, 1)
    with httpx.Client(timeout=15) as before:
        mine = call(before, server, "workflow_claim", {"runId": parent}, **{"Mcp-Session-Id": "agent-7"})
    assert mine["claimed"] is True
    with httpx.Client(timeout=15) as after:  # a new connection (another replica, say): the same agent
        submit = {"runId": mine["runId"], "stepId": "plan", "output": "Plan: one."}
        accepted = call(after, server, "workflow_continue", submit, **{"Mcp-Session-Id": "agent-7"})
        assert accepted["accepted"] is True
        other = call(after, server, "workflow_continue", {**submit, "stepId": "build", "output": "Built."},
                     **{"Mcp-Session-Id": "agent-8"})  # fmt: skip
        assert other["error"]["code"] == -32013 and other["error"]["data"]["holderKind"] == "http-session"


def test_the_tool_list_offers_workflow_claim(served: tuple[HttpServer, str]) -> None:
    server, _ = served
    listed = server.rpc("tools/list", {})["result"]["tools"]
    [tool] = [t for t in listed if t["name"] == "workflow_claim"]
    assert set(tool["inputSchema"]["properties"]) == {"runId", "workflowId", "workspace"}


def test_the_tree_shows_each_holder_by_its_kind_and_a_short_id_never_a_host_and_port(
    served: tuple[HttpServer, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from handrail.cli import main

    server, url = served
    with httpx.Client(timeout=15) as one, httpx.Client(timeout=15) as two:
        parent = fan_out(one, server, url, tmp_path, 3)
        call(one, server, "workflow_claim", {"runId": parent})
        call(two, server, "workflow_claim", {"runId": parent}, **{"Mcp-Session-Id": "agent-7"})
        call(two, server, "workflow_claim", {"runId": parent}, **{"Mcp-Session-Id": "a" * 40})
    assert main(["runs", "show", parent, "--format", "json", "--database", url]) == 0
    shown = capsys.readouterr().out
    holders = [c["holder"] for c in json.loads(shown)["tree"]["children"]]
    assert holders[1:] == ["http-session:agent-7", "http-session:" + "a" * 16 + "…"]
    kind, _, short = holders[0].partition(":")
    assert kind == "http-connection" and len(short) == 8 and int(short, 16) >= 0
    assert main(["runs", "show", parent, "--database", url]) == 0
    drawn = capsys.readouterr().out
    assert f"held by {holders[0]} until" in drawn and "http-session:agent-7" in drawn
    assert main(["runs", "list", "--tree", "--database", url]) == 0
    listed = capsys.readouterr().out
    assert holders[0] in listed and "127.0.0.1" not in shown + drawn + listed
