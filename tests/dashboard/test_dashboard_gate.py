"""The gate's decisions in the dashboard's run timeline, in a real headless Chromium:
a real `handrail serve` answers Claude Code's HTTP hooks, and its run page lists what
the gate denied, refused and recorded, under the step it happened in."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gate.runs import GateWorld, claude_input
from tests.helpers.http import HttpServer

pytestmark = pytest.mark.slow


def test_the_run_page_shows_the_gates_decisions_under_their_step(world: GateWorld, page: Any) -> None:
    args = ("--no-bundled", "--workflows", str(world.workflows), "--database", world.url)
    with HttpServer(*args, env={"HANDRAIL_HOME": str(world.handrail_home)}) as server:
        reply = server.rpc(
            "tools/call",
            {
                "name": "workflow_start",
                "arguments": {
                    "workflowId": "gate-fixture",
                    "goal": "Add a discount",
                    "workspace": str(world.workspace),
                },
            },
        )
        run = reply["result"]["structuredContent"]["runId"]
        url = f"{server.base}/hooks/claude-code"
        edit = {"file_path": str(world.workspace / "src" / "cart.py"), "content": "<b>x</b>"}
        read = {"file_path": str(world.workspace / "README.md")}
        for body in (
            claude_input(world, "PreToolUse", tool_name="Write", tool_input=edit),
            claude_input(world, "PostToolUse", tool_name="Read", tool_input=read, tool_response={}),
            claude_input(world, "Stop", stop_hook_active=False),
        ):
            assert server.client.post(url, content=body).status_code == 200

        page.goto(f"{server.base}/runs/{run}")
        gate = page.locator("[data-step='plan'] .event-gate")
        assert gate.count() == 3
        lines = gate.locator("p.gate").all_inner_texts()
        assert lines[0].startswith("before-tool: deny · edit:src/cart.py")
        assert lines[1].startswith("after-tool: record · read:README.md · ok")
        assert lines[2].startswith("stop: block")
        assert "does not allow edit:src/cart.py" in gate.nth(0).locator(".reason").inner_text()
        assert "is at step 'plan' (1 of 4)" in gate.nth(2).locator(".reason").inner_text()
        assert page.errors == []
