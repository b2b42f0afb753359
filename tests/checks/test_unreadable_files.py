"""File checks on files they cannot read: a named pipe swapped in for a matching file
after the search, and a workspace (/proc) whose links cannot be resolved. The check
fails and says why; it never blocks, and the server keeps answering."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from handrail.checks import files
from tests.helpers.server import ROOT

pytestmark = pytest.mark.slow

FLOW = "unreadable"
PIPE = "`z-notes.md` is no longer a regular file (a named pipe, a device?), so it was not read"


def test_a_file_swapped_for_a_named_pipe_after_the_search_is_not_read_and_the_reason_says_so(
    tmp_path: Path,
) -> None:
    pipe = tmp_path / "notes.md"
    os.mkfifo(pipe)  # what the search found as a file is a pipe by the time it is read
    got: list[object] = []
    reading = threading.Thread(target=lambda: got.append(files._read(str(pipe), 1000)), daemon=True)
    reading.start()
    reading.join(10)
    if reading.is_alive():  # release the blocked reader before failing
        os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
    assert not reading.is_alive(), "reading a named pipe blocked"
    assert got == [files.Unread("is no longer a regular file (a named pipe, a device?), so it was not read")]


def _server(tmp: Path, checks: list[dict[str, Any]]) -> StdioServerParameters:
    flows = tmp / "flows"
    flows.mkdir()
    step = {"id": "doc", "title": "Doc", "prompt": "Write notes.md.", "checks": checks}
    workflow = {"id": FLOW, "name": "Unreadable", "description": "d", "version": "1.0.0", "steps": [step]}
    (flows / f"{FLOW}.json").write_text(json.dumps(workflow))
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "handrail", "start", "--no-bundled", "--workflows", str(flows)],
        env={
            "HOME": str(tmp / "home"),
            "HANDRAIL_HOME": str(tmp / "handrail-home"),
            "PYTHONPATH": str(ROOT / "src"),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        },
        cwd=tmp,
    )


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(30):  # a check that blocks would hold the answer for ever
        result = await client.call_tool(name, arguments)
    assert result.structured_content is not None and not result.is_error, result
    return dict(result.structured_content)


def _session(params: StdioServerParameters, script: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with Client(params) as client:
            return await script(client)

    return anyio.run(main)


def test_a_fifo_swapped_in_mid_check_fails_the_check_and_the_server_keeps_answering(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    notes, spare_file, spare_pipe = workspace / "z-notes.md", tmp_path / "file.tmp", tmp_path / "pipe.tmp"
    notes.write_text("draft\n")
    for n in range(1500):  # read first, they give the swap below time between the search and the read
        (workspace / f"a{n:04}.md").write_text("draft\n")
    stop = threading.Event()

    def swap() -> None:  # notes.md is a file, then a named pipe, then a file again, each for a moment
        while not stop.is_set():
            os.mkfifo(spare_pipe)
            os.replace(spare_pipe, notes)
            time.sleep(0.0002)
            spare_file.write_text("draft\n")
            os.replace(spare_file, notes)
            time.sleep(0.0002)

    check = {"type": "file", "path": "*.md", "contains": "^DONE$", "message": "Notes are done"}

    async def script(client: Client) -> tuple[list[str], dict[str, Any]]:
        run = await _call(
            client, "workflow_start", {"workflowId": FLOW, "goal": "g", "workspace": str(workspace)}
        )
        reasons = []
        while len(reasons) < 100 and sum(PIPE in why for why in reasons) < 2:  # each try hits it ~1 in 4
            answer = await _call(
                client, "workflow_continue", {"runId": run["runId"], "stepId": "doc", "output": "o"}
            )
            assert answer["accepted"] is False
            reasons.append(answer["checks"][0]["why"])
        return reasons, await _call(client, "workflow_list", {})

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    try:
        reasons, listed = _session(_server(tmp_path, [check]), script)
    finally:
        stop.set()
        swapper.join(5)
    assert [w["id"] for w in listed["workflows"]] == [FLOW]
    assert any(PIPE in why for why in reasons), reasons
    assert all(why.startswith("none of the matching files contains /^DONE$/") for why in reasons), reasons


def _proc_links_are_unreadable() -> bool:
    try:
        os.readlink("/proc/1/cwd")
    except PermissionError:
        return True
    except OSError:
        return False
    return False


@pytest.mark.skipif(
    not _proc_links_are_unreadable(), reason="here /proc/1/cwd can be read: nothing to refuse"
)
def test_a_file_check_in_proc_that_cannot_resolve_a_link_fails_with_the_reason(tmp_path: Path) -> None:
    checks = [
        {"type": "file", "path": "1/cwd", "message": "a link that cannot be read"},
        {"type": "file", "path": "1/cwd/*.md", "message": "a folder that cannot be resolved"},
        {"type": "file", "path": "1/*", "contains": "never-there-at-all", "message": "beside such a link"},
    ]

    async def script(client: Client) -> dict[str, Any]:
        run = await _call(client, "workflow_start", {"workflowId": FLOW, "goal": "g", "workspace": "/proc"})
        return await _call(
            client, "workflow_continue", {"runId": run["runId"], "stepId": "doc", "output": "o"}
        )

    answer = _session(_server(tmp_path, checks), script)
    assert answer["accepted"] is False
    whys = [c["why"] for c in answer["checks"]]
    unresolved = "`1/cwd` is a link that cannot be resolved (Permission denied) (not evidence)"
    assert whys[0] == f"no file matches `1/cwd`; {unresolved}"
    assert whys[1] == "`1/cwd` cannot be looked at: Permission denied"
    assert whys[2].startswith("none of the matching files contains /never-there-at-all/")
