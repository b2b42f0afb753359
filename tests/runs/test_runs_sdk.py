"""A whole run through the official MCP SDK client and a real `handrail start` process:
a rejected attempt, a loop, a `kill -9` in the middle, and the run resumed by a new
process (and a new conversation) from what the database holds."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.helpers.server import ROOT
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

pytestmark = pytest.mark.slow

LAUNCH = (
    "import os, sys\n"
    "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
    "from handrail.cli import main\n"
    "raise SystemExit(main(sys.argv[2:]))\n"
)


def _params(tmp: Path, pidfile: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-c", LAUNCH, str(pidfile), "start", "--no-bundled", "--workflows", str(tmp / "flows")],
        env={
            "HOME": str(tmp / "home"),
            "HANDRAIL_HOME": str(tmp / "handrail-home"),
            "PYTHONPATH": str(ROOT / "src"),
        },
        cwd=tmp / "workspace",
    )


async def _call(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(name, arguments)
    assert result.structured_content is not None, result
    content = dict(result.structured_content)
    if result.is_error:
        return {"error": content}
    return content


async def _submit(session: ClientSession, run: str, step: str, output: str) -> dict[str, Any]:
    return await _call(session, "workflow_continue", {"runId": run, "stepId": step, "output": output})


async def _first_process(tmp: Path) -> dict[str, Any]:
    record: dict[str, Any] = {}
    pidfile = tmp / "first.pid"
    with (tmp / "first.log").open("w") as errlog, contextlib.suppress(Exception):
        async with (
            stdio_client(_params(tmp, pidfile), errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            with anyio.fail_after(30):
                await session.initialize()
                started = await _call(
                    session,
                    "workflow_start",
                    {
                        "workflowId": WORKFLOW_ID,
                        "goal": "Add a --verbose flag",
                        "context": {"parts": ["cli", "docs"]},
                    },
                )
                record["started"] = started
                run = started["runId"]
                record["rejected"] = await _submit(session, run, "plan", "I will do it.")
                record["plan"] = await _submit(session, run, "plan", "Plan: cli, docs.")
                record["skip_ahead"] = await _submit(session, run, "report", "All done!")
                record["build_cli"] = await _submit(session, run, "build", "Built the cli flag.")
                os.kill(int(pidfile.read_text()), signal.SIGKILL)  # no goodbye: the process just dies
                record["killed"] = True
    return record


async def _second_process(tmp: Path, run: str) -> dict[str, Any]:
    record: dict[str, Any] = {}
    async with (
        stdio_client(_params(tmp, tmp / "second.pid"), errlog=(tmp / "second.log").open("w")) as (
            read,
            write,
        ),
        ClientSession(read, write) as session,
    ):
        with anyio.fail_after(30):
            record["initialize"] = await session.initialize()
            record["open_runs"] = await _call(session, "workflow_resume", {})
            record["resumed"] = await _call(session, "workflow_resume", {"runId": run})
            record["build_docs"] = await _submit(session, run, "build", "Built the docs page.")
            record["report"] = await _submit(session, run, "report", "Shipped both parts.")
            record["after_end"] = await _submit(session, run, "report", "Once more.")
            record["unknown"] = await _call(session, "workflow_resume", {"runId": "run_" + "0" * 32})
    return record


def test_a_run_survives_kill_9_and_is_finished_by_a_new_process(tmp_path: Path) -> None:
    write(tmp_path / "flows", build_feature())
    (tmp_path / "workspace").mkdir()
    (tmp_path / "home").mkdir()
    started_at = time.monotonic()
    first = anyio.run(_first_process, tmp_path)
    assert time.monotonic() - started_at < 60
    assert first.get("killed"), first

    started = first["started"]
    assert started["status"] == "active" and started["step"]["id"] == "plan"
    assert started["workflowVersion"] == "1.0.0" and started["progress"] == {"completed": 0}
    assert started["workflowId"] == WORKFLOW_ID and started["goal"] == "Add a --verbose flag"
    assert len(started["runId"]) >= 32

    rejected = first["rejected"]
    assert rejected["accepted"] is False and rejected["step"]["id"] == "plan"
    assert rejected["issues"] == ["Start the plan with 'Plan:'"]
    assert first["plan"]["accepted"] is True and first["plan"]["step"]["prompt"] == "Build cli."
    assert first["skip_ahead"]["error"]["code"] == -32009
    assert first["skip_ahead"]["error"]["data"]["currentStep"] == "build"
    assert first["build_cli"]["accepted"] is True and first["build_cli"]["step"]["prompt"] == "Build docs."

    run = started["runId"]
    second = anyio.run(_second_process, tmp_path, run)
    instructions = second["initialize"].instructions
    assert run in instructions and "workflow_resume" in instructions
    assert [r["runId"] for r in second["open_runs"]["runs"]] == [run]
    assert second["open_runs"]["runs"][0]["currentStep"] == {"id": "build", "title": "Build a part"}
    resumed = second["resumed"]
    assert resumed["step"]["prompt"] == "Build docs." and resumed["progress"] == {"completed": 2}
    assert [(r["stepId"], r["summary"]) for r in resumed["recap"]] == [
        ("plan", "Plan: cli, docs."),
        ("build", "Built the cli flag."),
    ]
    assert resumed["context"] == {"parts": ["cli", "docs"]}
    assert "newerVersion" not in resumed
    assert second["build_docs"]["step"]["id"] == "report"
    assert second["report"]["status"] == "completed" and second["report"]["isComplete"] is True
    assert second["after_end"]["error"]["code"] == -32010
    assert second["after_end"]["error"]["data"]["status"] == "completed"
    assert second["unknown"]["error"]["code"] == -32008
