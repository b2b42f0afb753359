"""The server's instructions as a real MCP client gets them: the essentials (what handrail
is, how a run goes, how to resume, the open runs) within 2,000 characters, since
Claude Code keeps only the first 2,048, and the rest in the resource they name."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from handrail.protocol.surface.texts import GUIDE_URI
from tests.helpers.server import ROOT

pytestmark = pytest.mark.slow

RUNS = 12  # more than the instructions list (10), each with a long goal
GOAL = "Add a --verbose flag to every command and say in the docs what it prints " * 3


def _params(tmp: Path) -> StdioServerParameters:
    return StdioServerParameters(  # the bundled workflows: their descriptions alone pass 2,000
        command=sys.executable,
        args=["-m", "handrail", "start"],
        env={
            "HOME": str(tmp / "home"),
            "HANDRAIL_HOME": str(tmp / "handrail-home"),
            "PYTHONPATH": str(ROOT / "src"),
        },
        cwd=tmp / "workspace",
    )


async def _session(tmp: Path, start_runs: bool) -> dict[str, Any]:
    record: dict[str, Any] = {}
    async with (
        stdio_client(_params(tmp), errlog=(tmp / "server.log").open("a")) as (read, write),
        ClientSession(read, write) as session,
    ):
        with anyio.fail_after(60):
            record["initialize"] = await session.initialize()
            if start_runs:
                for n in range(RUNS):
                    started = await session.call_tool(
                        "workflow_start", {"workflowId": "coding-task", "goal": f"{n}: {GOAL}"}
                    )
                    assert started.structured_content is not None and not started.is_error, started
                    record.setdefault("runs", []).append(started.structured_content["runId"])
            else:
                read_back = await session.read_resource(GUIDE_URI)  # type: ignore[arg-type]
                record["guide"] = read_back.contents[0].text  # type: ignore[union-attr]
    return record


def test_the_instructions_fit_2000_characters_with_open_runs_and_name_where_the_rest_is(
    tmp_path: Path,
) -> None:
    for folder in ("home", "workspace"):
        (tmp_path / folder).mkdir()
    runs = anyio.run(_session, tmp_path, True)["runs"]
    second = anyio.run(_session, tmp_path, False)
    text = second["initialize"].instructions
    assert text is not None and len(text) <= 2000, len(text)
    assert text.startswith("handrail keeps you on a workflow's steps")
    for essential in ("workflow_start", "workflow_continue", "workflow_resume", "Unfinished runs", GUIDE_URI):
        assert essential in text
    assert runs[-1] in text  # the latest open run first
    assert "more (workflow_resume lists them)" in text  # the runs that did not fit are counted
    assert "coding-task (6 steps)" in text
    guide = second["guide"]
    assert "Description:" in guide and "workflow_next" in guide and "workflow_start" in guide
    assert all(run in guide for run in runs[-10:])  # every run the instructions would list
    assert len(guide) > 2000
