"""Runs over `handrail serve` (Streamable HTTP, stateless): the same tools, the same
store; a run started over stdio is continued over HTTP on the same database."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.http import HttpServer
from tests.helpers.server import Server
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

pytestmark = pytest.mark.slow


def test_a_run_started_over_stdio_is_finished_over_http_on_the_same_database(tmp_path: Path) -> None:
    write(tmp_path / "flows", build_feature())
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    common = ("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", database)
    with Server(*common) as stdio:
        stdio.initialize()
        started = stdio.result(
            "workflow_start",
            {"workflowId": WORKFLOW_ID, "goal": "Both ways", "context": {"parts": ["one"]}},
        )
    run = started["runId"]
    with HttpServer(*common) as http:
        plan = http.rpc("workflow_continue", {"runId": run, "stepId": "plan", "output": "Plan: one."})
        assert plan["result"]["accepted"] is True and plan["result"]["step"]["prompt"] == "Build one."
        wrong = http.rpc("workflow_continue", {"runId": run, "stepId": "plan", "output": "Plan: again."})
        assert wrong["error"]["code"] == -32009 and wrong["error"]["data"]["currentStep"] == "build"
        call = http.rpc(
            "tools/call",
            {
                "name": "workflow_continue",
                "arguments": {"runId": run, "stepId": "build", "output": "Built one."},
            },
        )
        assert call["result"]["isError"] is False
        assert call["result"]["structuredContent"]["step"]["id"] == "report"
        resumed = http.rpc("workflow_resume", {"runId": run})["result"]
        assert [r["stepId"] for r in resumed["recap"]] == ["plan", "build"]
        unknown = http.rpc("workflow_abandon", {"runId": "run_" + "1" * 32, "reason": "x"})
        assert unknown["error"] == {
            "code": -32008,
            "message": "Run not found",
            "data": {"runId": "run_" + "1" * 32},
        }
