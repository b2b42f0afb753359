"""Live reload, end to end: a real `handrail start` process over its stdio pipes (the
driver in tests/helpers/server.py), with workflow files added, changed, broken, fixed
and removed while it serves requests."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.server import Server

pytestmark = pytest.mark.slow

WITHIN = 1.0  # a change must be seen by a request within this many seconds


def workflow(wid: str, *, version: str = "1.0.0", title: str = "First step") -> dict[str, Any]:
    return {
        "id": wid,
        "name": f"Workflow {wid}",
        "description": f"The {wid} workflow.",
        "version": version,
        "steps": [
            {"id": "step-one", "title": title, "prompt": "Do the first thing."},
            {"id": "step-two", "title": "Second step", "prompt": "Do the second thing."},
        ],
    }


def write(path: Path, wid: str, **kwargs: Any) -> Path:
    text = json.dumps(workflow(wid, **kwargs), indent=2)
    temporary = path.with_name(path.name + ".tmp")  # not *.json: never discovered
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return path


# `"id": oops` on line 4: not JSON
BROKEN = '{\n  "id": "alpha",\n  "steps": [\n    {"id": oops}\n  ]\n}\n'
BROKEN_LINE = 4


def start(folder: Path) -> Server:
    """`handrail start --no-bundled --workflows FOLDER --reload-interval 0.1`."""
    return Server("--no-bundled", "--workflows", str(folder), "--reload-interval", "0.1")


def workflow_list(server: Server) -> dict[str, Any]:
    result = server.call("workflow_list", {})
    assert result["isError"] is False, result
    found: dict[str, Any] = result["structuredContent"]
    return found


def versions(server: Server) -> dict[str, str]:
    return {w["id"]: w["version"] for w in workflow_list(server)["workflows"]}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "workflows"
    path.mkdir()
    return path


@pytest.fixture
def server(folder: Path) -> Iterator[Server]:
    write(folder / "alpha.json", "alpha", version="1.0.0", title="Alpha one")
    with start(folder) as running:  # fails on any stdout line that is no JSON-RPC message
        running.initialize()
        # the server compiles right after answering initialize; a first answer about the
        # workflows means alpha 1.0.0 is loaded before any test edits it
        assert versions(running) == {"alpha": "1.0.0"}
        yield running


def within(check: Callable[[], bool], seconds: float = WITHIN) -> float:
    """Seconds until `check()` (which sends a request) held; fails after `seconds`."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > seconds:
            raise AssertionError(f"not seen within {seconds}s")
        time.sleep(0.02)
    return time.monotonic() - start


def first_title(server: Server, wid: str) -> str | None:
    result = server.call("workflow_next", {"workflowId": wid, "completedSteps": []})
    if result["isError"]:
        return None
    title: str = result["structuredContent"]["step"]["title"]
    return title


def wait_for_notification(server: Server, seconds: float = WITHIN) -> None:
    """A list_changed notification arrives (perhaps already set aside), with no request needed."""
    deadline = time.monotonic() + seconds
    while not any(n["method"] == "notifications/resources/list_changed" for n in server.notifications):
        left = deadline - time.monotonic()
        assert left > 0, "no notifications/resources/list_changed"
        message = server.recv(left)
        assert "method" in message, f"an unexpected response: {message}"
        server.notifications.append(message)
    server.notifications.clear()


def test_added_changed_and_removed_files_are_served_within_a_second(server: Server, folder: Path) -> None:
    assert versions(server) == {"alpha": "1.0.0"}
    assert first_title(server, "alpha") == "Alpha one"
    assert server.notifications == []

    (folder / "nested" / "deeper").mkdir(parents=True)
    write(folder / "nested" / "deeper" / "beta.json", "beta")  # folders are read recursively
    wait_for_notification(server)  # told without asking
    within(lambda: "beta" in versions(server))
    assert first_title(server, "beta") == "First step"

    write(folder / "alpha.json", "alpha", version="2.0.0", title="Alpha two")
    within(lambda: first_title(server, "alpha") == "Alpha two")
    assert versions(server) == {"alpha": "2.0.0", "beta": "1.0.0"}
    got = server.result("workflow_get", {"id": "alpha"})  # the direct method form agrees
    assert (got["version"], got["steps"][0]["title"]) == ("2.0.0", "Alpha two")

    (folder / "nested" / "deeper" / "beta.json").unlink()
    within(lambda: "beta" not in versions(server))
    gone = server.call("workflow_next", {"workflowId": "beta", "completedSteps": []})
    assert gone["isError"] is True and gone["structuredContent"]["code"] == -32001
    resources = server.result("resources/list")["resources"]
    assert [r["uri"] for r in resources] == ["workflow://alpha", "workflow://schema"]


def test_a_broken_edit_keeps_the_last_good_version_and_is_reported(server: Server, folder: Path) -> None:
    path = folder / "alpha.json"
    path.write_text(BROKEN, encoding="utf-8")

    def reported() -> bool:
        return any(d["file"] == str(path) for d in workflow_list(server)["diagnostics"])

    within(reported)
    listing = workflow_list(server)
    assert [(w["id"], w["version"]) for w in listing["workflows"]] == [("alpha", "1.0.0")]
    (problem,) = listing["diagnostics"]
    assert (problem["file"], problem["line"], problem["severity"]) == (str(path), BROKEN_LINE, "error")
    assert problem["column"] >= 1 and problem["message"]
    assert first_title(server, "alpha") == "Alpha one"  # still served, as it last was
    assert server.result("workflow_get", {"id": "alpha"})["version"] == "1.0.0"
    within(lambda: str(path) in server.stderr)  # and logged

    # a file that never compiled: left out, reported, and it hides nothing
    (folder / "never.json").write_text("[1, 2,", encoding="utf-8")
    write(folder / "gamma.json", "gamma")
    within(lambda: "gamma" in versions(server))
    listing = workflow_list(server)
    assert sorted(w["id"] for w in listing["workflows"]) == ["alpha", "gamma"]
    assert {d["file"] for d in listing["diagnostics"]} == {str(path), str(folder / "never.json")}

    # the fix is served, and the report goes away
    write(path, "alpha", version="3.0.0", title="Alpha three")
    (folder / "never.json").unlink()
    within(lambda: first_title(server, "alpha") == "Alpha three")
    within(lambda: workflow_list(server)["diagnostics"] == [])
    assert versions(server) == {"alpha": "3.0.0", "gamma": "1.0.0"}


KINDS = ("get", "direct-get", "next", "list")
REQUESTS: dict[str, tuple[str, dict[str, Any]]] = {
    "get": ("tools/call", {"name": "workflow_get", "arguments": {"id": "alpha"}}),
    "direct-get": ("workflow_get", {"id": "alpha"}),
    "next": (
        "tools/call",
        {"name": "workflow_next", "arguments": {"workflowId": "alpha", "completedSteps": []}},
    ),
    "list": ("tools/call", {"name": "workflow_list", "arguments": {}}),
}


def test_a_burst_of_rewrites_under_a_stream_of_requests(server: Server, folder: Path) -> None:
    """A thread rewrites alpha.json as fast as it can (half by os.replace, half by truncating
    writes in place) while ~300 requests stream in. Every answer is well formed and in
    order, every workflow_get is one whole version, and the last write is what stays."""
    path = folder / "alpha.json"
    stop = threading.Event()
    written: list[int] = []

    def rewrite() -> None:
        n = 100
        while not stop.is_set() and n < 999:
            n += 1
            text = json.dumps(workflow("alpha", version=f"1.0.{n}", title=f"Title {n}"), indent=2)
            if n % 2:
                temporary = path.with_name("alpha.json.tmp")
                temporary.write_text(text, encoding="utf-8")
                os.replace(temporary, path)
            else:
                # truncate, then write in two parts: a reader may see it empty or half written
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(text[: len(text) // 2])
                    handle.flush()
                    time.sleep(0.003)  # widen the window in which the file is half written
                    handle.write(text[len(text) // 2 :])
            written.append(n)
            time.sleep(0.002)

    writer = threading.Thread(target=rewrite, daemon=True)
    writer.start()
    sent: list[tuple[int, str]] = []
    try:
        for _ in range(30):  # 300 requests over about 1.5 s: some 15 reloads happen among them
            batch = []
            for i in range(10):
                rid, kind = server.new_id(), KINDS[i % len(KINDS)]
                method, params = REQUESTS[kind]
                batch.append({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
                sent.append((rid, kind))
            server.send(*batch)
            time.sleep(0.05)

        seen_versions: set[int] = set()
        for rid, kind in sent:
            reply = server.response(rid)  # in order: each reply answers the next request sent
            assert "result" in reply, reply
            result = reply["result"]
            if kind != "direct-get":
                assert result["isError"] is False, result
                assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
                result = result["structuredContent"]
            if kind in ("get", "direct-get"):
                version = int(result["version"].rsplit(".", 1)[1])
                assert result["steps"][0]["title"] == f"Title {version}" or (
                    version == 0 and result["steps"][0]["title"] == "Alpha one"
                ), result
                seen_versions.add(version)
            elif kind == "next":
                assert result["step"]["id"] == "step-one"
                assert result["step"]["title"] == "Alpha one" or result["step"]["title"].startswith("Title ")
            else:
                assert [w["id"] for w in result["workflows"]] == ["alpha"]
        assert len(seen_versions) > 1, "the stream saw no reload at all"
    finally:
        stop.set()
        writer.join(5)

    last = written[-1]
    within(lambda: server.result("workflow_get", {"id": "alpha"})["version"] == f"1.0.{last}")
    assert first_title(server, "alpha") == f"Title {last}"
    within(lambda: workflow_list(server)["diagnostics"] == [])  # a half-written read left no lasting mark
    assert server.result("ping") == {}


def test_no_notification_before_initialize_nor_without_a_change(folder: Path) -> None:
    write(folder / "alpha.json", "alpha")
    with start(folder) as server:  # fails on any stdout line that is no JSON-RPC message
        assert server.result("ping") == {}  # up and serving
        write(folder / "beta.json", "beta")
        time.sleep(0.4)  # several reloads happen before the client has initialized
        assert server.quiet(), "the server spoke before initialize"
        server.initialize()
        assert server.notifications == []
        time.sleep(0.3)  # nothing changes: nothing is said
        assert server.result("ping") == {}
        assert server.notifications == []
        assert sorted(versions(server)) == ["alpha", "beta"]
