"""Live reload, end to end: a real `handrail start` process over its stdio pipes, with
workflow files added, changed, broken, fixed and removed while it serves requests."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

TIMEOUT = 10.0
WITHIN = 1.0  # a change must be seen by a request within this many seconds
ENV_VARIABLES = ("WORKFLOW_STORAGE_PATH", "HANDRAIL_WORKFLOWS", "WORKFLOW_INCLUDE_BUNDLED")


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


class Server:
    """`python -m handrail start --no-bundled --workflows FOLDER --reload-interval 0.1`,
    with HOME and the working folder pointed at a private empty folder."""

    def __init__(self, folder: Path, home: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ENV_VARIABLES}
        env["HOME"] = str(home)
        env["PYTHONIOENCODING"] = "utf-8"
        self.proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "handrail", "start"),
                *("--no-bundled", "--workflows", str(folder), "--reload-interval", "0.1"),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=home,
            env=env,
        )
        self.messages: queue.Queue[Any] = queue.Queue()
        self.notifications: list[dict[str, Any]] = []
        self.bad_lines: list[bytes] = []
        self._stderr = bytearray()
        self._next_id = 0
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            try:
                message = json.loads(raw)
                well_formed(message)
            except (ValueError, AssertionError):
                self.bad_lines.append(raw)
                continue
            self.messages.put(message)
        self.messages.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):  # type: ignore[union-attr]
            self._stderr.extend(chunk)

    @property
    def stderr(self) -> str:
        return self._stderr.decode("utf-8", "replace")

    def send(self, *messages: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        self.proc.stdin.flush()

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def next_message(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        try:
            message = self.messages.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"nothing within {timeout}s; stderr:\n{self.stderr[-2000:]}") from None
        if message is None:
            raise AssertionError(f"the server closed stdout; stderr:\n{self.stderr[-2000:]}")
        assert isinstance(message, dict)
        return message

    def response(self, rid: int, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The next response (which must answer `rid`), setting notifications aside."""
        while True:
            message = self.next_message(timeout)
            if "method" in message:
                self.notifications.append(message)
                continue
            assert message["id"] == rid, f"expected the answer to {rid}, got {message}"
            return message

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        rid = self.new_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.response(rid)

    def result(self, method: str, params: dict[str, Any] | None = None) -> Any:
        reply = self.request(method, params)
        assert "result" in reply, reply
        return reply["result"]

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.result("tools/call", {"name": tool, "arguments": arguments})
        return result

    def initialize(self) -> None:
        self.result(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def listing(self) -> dict[str, Any]:
        result = self.call("workflow_list", {})
        assert result["isError"] is False, result
        listing: dict[str, Any] = result["structuredContent"]
        return listing

    def versions(self) -> dict[str, str]:
        return {w["id"]: w["version"] for w in self.listing()["workflows"]}

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        for thread in self._threads:
            thread.join(5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def well_formed(message: Any) -> None:
    assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", message
    if "method" in message:
        assert "id" not in message and set(message) <= {"jsonrpc", "method", "params"}, message
        return
    assert isinstance(message.get("id"), int), message
    assert ("result" in message) != ("error" in message), message
    assert set(message) == {"jsonrpc", "id", "result" if "result" in message else "error"}, message


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "workflows"
    path.mkdir()
    return path


@pytest.fixture
def server(tmp_path: Path, folder: Path) -> Iterator[Server]:
    home = tmp_path / "home"
    home.mkdir()
    write(folder / "alpha.json", "alpha", version="1.0.0", title="Alpha one")
    running = Server(folder, home)
    try:
        running.initialize()
        # the server compiles right after answering initialize; a first answer about the
        # workflows means alpha 1.0.0 is loaded before any test edits it
        assert running.versions() == {"alpha": "1.0.0"}
        yield running
        assert not running.bad_lines, f"stdout carried non-protocol lines: {running.bad_lines[:3]}"
    finally:
        running.close()


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
        message = server.next_message(left)
        assert "method" in message, f"an unexpected response: {message}"
        server.notifications.append(message)
    server.notifications.clear()


def test_added_changed_and_removed_files_are_served_within_a_second(server: Server, folder: Path) -> None:
    assert server.versions() == {"alpha": "1.0.0"}
    assert first_title(server, "alpha") == "Alpha one"
    assert server.notifications == []

    (folder / "nested" / "deeper").mkdir(parents=True)
    write(folder / "nested" / "deeper" / "beta.json", "beta")  # folders are read recursively
    wait_for_notification(server)  # told without asking
    within(lambda: "beta" in server.versions())
    assert first_title(server, "beta") == "First step"

    write(folder / "alpha.json", "alpha", version="2.0.0", title="Alpha two")
    within(lambda: first_title(server, "alpha") == "Alpha two")
    assert server.versions() == {"alpha": "2.0.0", "beta": "1.0.0"}
    got = server.result("workflow_get", {"id": "alpha"})  # the direct method form agrees
    assert (got["version"], got["steps"][0]["title"]) == ("2.0.0", "Alpha two")

    (folder / "nested" / "deeper" / "beta.json").unlink()
    within(lambda: "beta" not in server.versions())
    gone = server.call("workflow_next", {"workflowId": "beta", "completedSteps": []})
    assert gone["isError"] is True and gone["structuredContent"]["code"] == -32001
    resources = server.result("resources/list")["resources"]
    assert [r["uri"] for r in resources] == ["workflow://alpha", "workflow://schema"]


def test_a_broken_edit_keeps_the_last_good_version_and_is_reported(server: Server, folder: Path) -> None:
    path = folder / "alpha.json"
    path.write_text(BROKEN, encoding="utf-8")

    def reported() -> bool:
        return any(d["file"] == str(path) for d in server.listing()["diagnostics"])

    within(reported)
    listing = server.listing()
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
    within(lambda: "gamma" in server.versions())
    listing = server.listing()
    assert sorted(w["id"] for w in listing["workflows"]) == ["alpha", "gamma"]
    assert {d["file"] for d in listing["diagnostics"]} == {str(path), str(folder / "never.json")}

    # the fix is served, and the report goes away
    write(path, "alpha", version="3.0.0", title="Alpha three")
    (folder / "never.json").unlink()
    within(lambda: first_title(server, "alpha") == "Alpha three")
    within(lambda: server.listing()["diagnostics"] == [])
    assert server.versions() == {"alpha": "3.0.0", "gamma": "1.0.0"}


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
    within(lambda: server.listing()["diagnostics"] == [])  # a half-written read left no lasting mark
    assert server.result("ping") == {}


def test_no_notification_before_initialize_nor_without_a_change(tmp_path: Path, folder: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    write(folder / "alpha.json", "alpha")
    server = Server(folder, home)
    try:
        assert server.result("ping") == {}  # up and serving
        write(folder / "beta.json", "beta")
        time.sleep(0.4)  # several reloads happen before the client has initialized
        assert server.messages.empty(), "the server spoke before initialize"
        server.initialize()
        assert server.notifications == []
        time.sleep(0.3)  # nothing changes: nothing is said
        assert server.result("ping") == {}
        assert server.notifications == []
        assert sorted(server.versions()) == ["alpha", "beta"]
        assert not server.bad_lines
    finally:
        server.close()
