"""Runs in real `handrail start` processes, spoken to in raw JSON lines: durability under
`kill -9`, two processes racing on one step, a workflow edited mid-run, --runs-only."""

from __future__ import annotations

import json
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.server import Server
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

pytestmark = pytest.mark.slow

PARTS = [f"part-{i}" for i in range(40)]


def _server(tmp: Path, *extra: str) -> Server:
    server = Server("--no-bundled", "--workflows", str(tmp / "flows"), "--database", _url(tmp), *extra)
    server.initialize()
    return server


def _url(tmp: Path) -> str:
    return f"sqlite:///{tmp / 'runs.db'}"


def _start(server: Server, parts: list[str], workspace: Path) -> str:
    started = server.result(
        "workflow_start",
        {
            "workflowId": WORKFLOW_ID,
            "goal": "Build it",
            "workspace": str(workspace),
            "context": {"parts": parts},
        },
    )
    run: str = started["runId"]
    assert server.result("workflow_continue", {"runId": run, "stepId": "plan", "output": "Plan: go."})[
        "accepted"
    ]
    return run


def _events(tmp: Path, run: str) -> list[tuple[int, str, str | None]]:
    with sqlite3.connect(tmp / "runs.db") as db:
        rows = db.execute("SELECT seq, type, step_id FROM run_events WHERE run_id = ? ORDER BY seq", (run,))
        return [(seq, kind, step) for seq, kind, step in rows]


def test_kill_9_mid_stream_loses_no_acknowledged_submission_and_leaves_no_half_written_run(
    tmp_path: Path,
) -> None:
    write(tmp_path / "flows", build_feature())
    server = _server(tmp_path)
    try:
        run = _start(server, PARTS, tmp_path)
        ids = [server.new_id() for _ in PARTS]
        server.send(
            *(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "workflow_continue",
                    "params": {"runId": run, "stepId": "build", "output": f"Built {part}."},
                }
                for rid, part in zip(ids, PARTS, strict=True)
            )
        )
        acknowledged = [server.response(rid)["result"] for rid in ids[:5]]
        server.signal(signal.SIGKILL)  # while later submissions are still being written
        server.wait()
    finally:
        server.close()
    assert all(a["accepted"] for a in acknowledged)
    # every answer that reached the pipe was acknowledged, read or not (initialize, start and
    # the plan's answer come first)
    acknowledged = [json.loads(line)["result"] for line in server.lines[3:]]
    assert len(acknowledged) >= 5

    events = _events(tmp_path, run)
    assert [seq for seq, _, _ in events] == list(range(1, len(events) + 1)), "the log has no gaps"
    accepted_builds = sum(1 for _, kind, step in events if kind == "accepted" and step == "build")
    assert accepted_builds >= max(a["progress"]["completed"] for a in acknowledged) - 1  # - the plan
    with sqlite3.connect(tmp_path / "runs.db") as db:
        (completed, position) = db.execute(
            "SELECT accepted, position FROM runs WHERE id = ?", (run,)
        ).fetchone()
    assert completed == accepted_builds + 1, "the run row and its event log agree"

    again = _server(tmp_path)
    try:
        resumed = again.result("workflow_resume", {"runId": run})
        assert resumed["progress"] == {"completed": completed}
        if accepted_builds < len(PARTS):
            assert resumed["step"]["prompt"] == f"Build {PARTS[accepted_builds]}."
        else:  # a fast server took every submission before the kill landed
            assert resumed["step"]["id"] != "build"
        assert json.loads(position)["step"]["prompt"] == resumed["step"]["prompt"]
        assert [r["summary"] for r in resumed["recap"][1:]] == [
            f"Built {p}." for p in PARTS[:accepted_builds]
        ]
    finally:
        again.close()


def test_two_processes_racing_on_one_step_accept_exactly_one(tmp_path: Path) -> None:
    write(tmp_path / "flows", build_feature())
    first, second = _server(tmp_path), _server(tmp_path)
    runs = []
    try:
        for round_ in range(8):
            started = first.result(
                "workflow_start",
                {"workflowId": WORKFLOW_ID, "goal": f"Race {round_}", "context": {"parts": ["x"]}},
            )
            run = started["runId"]
            runs.append(run)
            answers: dict[str, Any] = {}
            go = threading.Barrier(2)

            def submit(
                name: str,
                server: Server,
                run: str = run,
                go: threading.Barrier = go,
                answers: dict[str, Any] = answers,
            ) -> None:
                go.wait(5)
                try:
                    answers[name] = server.request(
                        "workflow_continue", {"runId": run, "stepId": "plan", "output": f"Plan: by {name}."}
                    )
                except Exception as exc:  # reported below, not lost in the thread
                    answers[name] = {"exception": repr(exc)}

            threads = [threading.Thread(target=submit, args=(n, s)) for n, s in (("a", first), ("b", second))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(15)
            results = [a["result"] for a in answers.values() if "result" in a]
            errors = [a["error"] for a in answers.values() if "error" in a]
            assert len(results) == 1 and len(errors) == 1, answers
            assert results[0]["accepted"] is True and results[0]["step"]["id"] == "build"
            assert errors[0]["code"] == -32009
            # the loser read the run after the winner wrote it ("the run is at `build`"), or
            # before ("another submission for `plan` was accepted first; the run is now at `build`")
            message = errors[0]["message"]
            assert message.startswith("Step is not current: ") and "at `build`" in message, message
            assert errors[0]["data"]["stepId"] == "plan" and errors[0]["data"]["currentStep"] == "build"
    finally:
        first.close()
        second.close()
    for run in runs:
        kinds = [kind for _, kind, _ in _events(tmp_path, run)]
        assert kinds == ["started", "accepted"], "exactly one acceptance in every run's log"


def test_a_workflow_edited_mid_run_keeps_the_run_on_its_version(tmp_path: Path) -> None:
    path = write(tmp_path / "flows", build_feature())
    server = _server(tmp_path, "--reload-interval", "0.05")
    try:
        run = _start(server, ["only"], tmp_path)
        write(tmp_path / "flows", build_feature("2.0.0", report_prompt="Report in verse."))
        deadline = time.monotonic() + 10
        while server.result("workflow_list")["workflows"][0]["version"] != "2.0.0":
            assert time.monotonic() < deadline, "the catalog never saw the edit"
            time.sleep(0.05)
        done = server.result("workflow_continue", {"runId": run, "stepId": "build", "output": "Built only."})
        assert done["step"]["prompt"] == "Report what you built."  # the version the run started on
        resumed = server.result("workflow_resume", {"runId": run})
        assert resumed["workflowVersion"] == "1.0.0"
        assert resumed["newerVersion"]["workflowVersion"] == "2.0.0"
        assert "stays on the version it started on" in resumed["newerVersion"]["note"]
        fresh = server.result("workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Again"})
        assert fresh["workflowVersion"] == "2.0.0"

        path.write_text("{ broken", encoding="utf-8")  # breaking the file stops nothing
        time.sleep(0.3)
        path.unlink()  # nor does deleting it
        deadline = time.monotonic() + 10
        while server.result("workflow_list")["workflows"]:
            assert time.monotonic() < deadline, "the catalog never saw the deletion"
            time.sleep(0.05)
        finished = server.result(
            "workflow_continue", {"runId": run, "stepId": "report", "output": "Done well."}
        )
        assert finished["status"] == "completed"
    finally:
        server.close()
    again = _server(tmp_path)  # a new process, the file gone: the stored source is enough
    try:
        resumed = again.result("workflow_resume", {"runId": run})
        assert resumed["status"] == "completed" and len(resumed["recap"]) == 3
        assert [r["title"] for r in resumed["recap"]] == ["Plan", "Build a part", "Report"]
    finally:
        again.close()


def test_runs_only_offers_the_run_tools_and_refuses_the_classic_stepping_tools(tmp_path: Path) -> None:
    write(tmp_path / "flows", build_feature())
    server = _server(tmp_path, "--runs-only")
    try:
        names = [t["name"] for t in server.result("tools/list")["tools"]]
        assert names == [
            "workflow_list",
            "workflow_start",
            "workflow_continue",
            "workflow_resume",
            "workflow_abandon",
            "workflow_claim",
        ]
        refused = server.call("workflow_next", {"workflowId": WORKFLOW_ID, "completedSteps": []})
        assert refused["isError"] is True
        assert "--runs-only" in refused["content"][0]["text"]
        assert "workflow_start" in refused["structuredContent"]["data"]["details"]
        direct = server.error("workflow_get", {"id": WORKFLOW_ID})
        assert "runs-only" in direct["message"]
        started = server.call("workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Still works"})
        assert started["isError"] is False
        # nor can the workflow be read whole through its resource; its prompt says to start a run
        resources = server.result("resources/list")["resources"]
        assert [r["uri"] for r in resources] == ["workflow://schema"]
        hidden = server.error("resources/read", {"uri": f"workflow://{WORKFLOW_ID}"})
        assert hidden["code"] == -32007 and "runs-only" in hidden["message"]
        assert server.result("resources/read", {"uri": "workflow://schema"})["contents"]
        prompt = server.result("prompts/get", {"name": WORKFLOW_ID})["messages"][0]["content"]["text"]
        assert "workflow_start" in prompt and "workflow_next" not in prompt
    finally:
        server.close()


def test_initialize_names_the_open_runs_of_the_workspace(tmp_path: Path) -> None:
    write(tmp_path / "flows", build_feature())
    first = _server(tmp_path)
    # a second process, not yet initialized, whose working folder is the runs' workspace
    second = Server("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", _url(tmp_path))
    try:
        assert first.initialized is not None
        assert "Unfinished runs" not in first.initialized["instructions"]  # nothing open yet
        run = _start(first, ["a"], second.folder)
        finished = _start(first, ["a"], second.folder)
        abandoned = first.result("workflow_abandon", {"runId": finished, "reason": "Not needed"})
        assert abandoned["status"] == "abandoned"
        again = first.error("workflow_abandon", {"runId": finished, "reason": "Twice"})
        assert again["code"] == -32010 and again["data"]["status"] == "abandoned"
        elsewhere = _start(first, ["a"], tmp_path)

        instructions = second.initialize()["instructions"]
        assert run in instructions and "workflow_resume" in instructions
        assert f"{WORKFLOW_ID}, goal: Build it; at step `build` (Build a part)" in instructions
        assert finished not in instructions and elsewhere not in instructions
        assert instructions.index(run) < instructions.index("Available workflows")
        listed = second.result("workflow_resume", {})  # its default workspace: its working folder
        assert [r["runId"] for r in listed["runs"]] == [run]
    finally:
        first.close()
        second.close()


def test_a_malformed_postgresql_url_is_refused_at_start_with_a_clear_message(tmp_path: Path) -> None:
    server = Server("--no-bundled", "--database", "postgresql://user:secret@db:port/handrail")
    try:
        assert server.wait() == 2
        assert "--database: PostgreSQL URL is malformed" in server.stderr
        assert "secret" not in server.stderr
    finally:
        server.close()


def test_an_unusable_database_fails_the_run_tools_only(tmp_path: Path) -> None:
    write(tmp_path / "flows", build_feature())
    (tmp_path / "a-file").write_text("not a folder")
    database = f"sqlite:///{tmp_path / 'a-file' / 'runs.db'}"
    with Server("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", database) as server:
        server.initialize()  # the handshake does not need the database
        failed = server.call("workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Nowhere to keep it"})
        assert failed["isError"] is True and failed["structuredContent"]["code"] == -32006
        assert "cannot create the run database" in failed["structuredContent"]["message"]
        listed = server.result("workflow_next", {"workflowId": WORKFLOW_ID, "completedSteps": []})
        assert listed["step"]["id"] == "plan"  # the classic tools carry on
