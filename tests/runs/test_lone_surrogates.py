"""Text that is not Unicode (half of a UTF-16 pair, which JSON's `\\ud800` escape lets
through) is refused by the run tools, naming where it is; a run an older handrail
stored with such text still shows, escaped, in `handrail runs` and the dashboard."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from handrail.model.runs import NewEvent, RunUpdate
from handrail.runs import gate_digest
from handrail.runs.pinning import Pins
from handrail.runs.position import Position
from handrail.store.sqlite import SqliteStore
from tests.helpers.http import HttpServer
from tests.helpers.server import Server, clean_env
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

pytestmark = pytest.mark.slow

TOKEN = "surrogate-test-token"


def _raw_call(server: Server, rid: int, name: str, arguments: dict[str, object]) -> dict[str, object]:
    """A tools/call as JSON writes half of a UTF-16 pair: `\\ud800` (json.dumps escapes it)."""
    message = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    server.send_raw(json.dumps(message).encode("ascii") + b"\n")
    result: dict[str, object] = server.response(rid)["result"]
    return result


def test_an_output_or_goal_holding_a_lone_surrogate_is_refused_naming_where_it_is(tmp_path: Path) -> None:
    write(tmp_path / "flows", build_feature())
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    with Server("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", database) as server:
        server.initialize()
        goal = _raw_call(server, 901, "workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Fix \ud800 it"})
        assert goal["isError"] is True
        error = goal["structuredContent"]
        assert isinstance(error, dict) and error["code"] == -32602
        assert "`goal` holds a lone surrogate (\\ud800) at character 4" in error["message"]
        run = server.result(
            "workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Fine", "workspace": str(tmp_path)}
        )["runId"]
        output = _raw_call(
            server, 902, "workflow_continue", {"runId": run, "stepId": "plan", "output": "Plan: ok \ud800"}
        )
        error = output["structuredContent"]
        assert isinstance(error, dict) and error["code"] == -32602
        assert error["data"]["argument"] == "output" and error["data"]["position"] == 9
        nested = _raw_call(
            server, 903, "workflow_continue", {"runId": run, "context": {"parts": ["a", "\udc00"]}}
        )
        error = nested["structuredContent"]
        assert isinstance(error, dict)
        assert "`context.parts[1]` holds a lone surrogate (\\udc00) at character 0" in error["message"]
        resumed = server.result("workflow_resume", {"runId": run})
        assert resumed["step"]["id"] == "plan"  # nothing was written
    store = SqliteStore(tmp_path / "runs.db")
    try:
        assert [e.type for e in store.events(run)] == ["started"]
    finally:
        store.close()


def _old_run(tmp_path: Path, database: str, *, bearer: str | None = None) -> tuple[str, HttpServer]:
    """A served run whose plan an older handrail accepted with `ok \\ud800` as its output
    (that handrail stored it through the same store call this one uses)."""
    write(tmp_path / "flows", build_feature())
    http = HttpServer(
        "--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", database,
        env={"HANDRAIL_TOKEN": TOKEN},
    )  # fmt: skip
    started = http.rpc(
        "workflow_start",
        {"workflowId": WORKFLOW_ID, "goal": "Old run", "workspace": str(tmp_path)},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    run_id: str = started["result"]["runId"]
    store = SqliteStore(tmp_path / "runs.db")
    try:
        run = store.get(run_id)
        assert run is not None
        context = {"note": "ctx \udcff"}
        # the row as its events give it (`runs verify` replays them): the plan accepted, the
        # gate digest of the next step
        after = Position.stored(run.position).advanced(
            Pins().workflow(run.source_hash, None, store), context, "plan"
        )
        source = json.loads(store.get_source(run.source_hash) or "{}")
        digest = gate_digest.compiled(source, after[0].to_stored(), gate_digest.folders_of(run.gate))
        store.update(
            run,
            RunUpdate(accepted=1, context=context, position=after[0].to_stored(), gate=digest),
            [NewEvent("accepted", "plan", {"output": "Plan: ok \ud800", "contextChanges": context})],
            run.owner,
        )
    finally:
        store.close()
    return run_id, http


def test_a_stored_run_holding_a_lone_surrogate_shows_escaped_in_every_format(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id, http = _old_run(tmp_path, database)
    http.close()
    env = clean_env(tmp_path)
    shown: dict[str, str] = {}
    for form in ("text", "json", "md"):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "handrail",
                "runs",
                "show",
                run_id,
                "--database",
                database,
                "--format",
                form,
            ],
            capture_output=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode()
        shown[form] = done.stdout.decode("utf-8")  # strict: the bytes are UTF-8
    assert "Plan: ok \\ud800" in shown["text"] and "Plan: ok \\ud800" in shown["md"]
    document = json.loads(shown["json"])  # the escape is JSON's own: the same text comes back
    assert document["events"][1]["output"] == "Plan: ok \ud800"
    assert document["run"]["context"] == {"note": "ctx \udcff"}
    listed = subprocess.run(
        [sys.executable, "-m", "handrail", "runs", "list", "--database", database, "--format", "json"],
        capture_output=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert listed.returncode == 0 and json.loads(listed.stdout)["runs"][0]["context"]["note"] == "ctx \udcff"


def test_the_dashboard_shows_a_stored_run_holding_a_lone_surrogate(tmp_path: Path) -> None:
    run_id, http = _old_run(tmp_path, f"sqlite:///{tmp_path / 'runs.db'}")
    with http:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        page = http.client.get(f"{http.base}/runs/{run_id}", headers=headers)
        assert page.status_code == 200, http.stderr
        assert "Plan: ok \\ud800" in page.content.decode("utf-8")
        row = http.client.get(f"{http.base}/api/runs/{run_id}", headers=headers)
        assert row.status_code == 200 and row.json()["runId"] == run_id
        listing = http.client.get(f"{http.base}/", headers=headers)
        assert listing.status_code == 200 and run_id in listing.text


def test_a_server_started_in_a_folder_whose_name_is_not_utf8_asks_for_a_workspace_instead_of_failing(
    tmp_path: Path,
) -> None:
    write(tmp_path / "flows", build_feature())
    folder = os.fsencode(tmp_path) + b"/caf\xe9"  # a Latin-1 name, as older tools made them
    os.mkdir(folder)
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    flows = str(tmp_path / "flows")
    with Server(
        "--no-bundled", "--workflows", flows, "--database", database, preexec_fn=lambda: os.chdir(folder)
    ) as server:
        server.initialize()
        for name, arguments in (
            ("workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Fix it"}),
            ("workflow_resume", {}),
        ):
            answer = server.call(name, arguments)
            assert answer["isError"] is True, answer
            error = answer["structuredContent"]
            assert error["code"] == -32602, error
            assert "caf\\xe9" in error["message"] and "workspace" in error["message"], error
        started = server.result(
            "workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Fix it", "workspace": str(tmp_path)}
        )
        assert started["status"] == "active"


def test_a_comment_holding_a_lone_surrogate_in_a_clients_approval_answer_is_kept_written_out(
    tmp_path: Path,
) -> None:
    from tests.helpers.http import CLIENT_CAPABILITIES_KEY, envelope
    from tests.runs.test_approval_answers import _asked, _server, _start

    with _server(tmp_path) as server:
        run = _start(server)
        state = _asked(server, {"runId": run, "stepId": "plan", "output": "Plan: one."})
        answer = {"action": "decline", "content": {"comment": "redo \ud800 it"}}
        meta = envelope(**{CLIENT_CAPABILITIES_KEY: {"elicitation": {}}})
        params = {"name": "workflow_continue", "arguments": {"runId": run, "stepId": "plan"}, "_meta": meta}
        message = {
            "jsonrpc": "2.0",
            "id": 904,
            "method": "tools/call",
            "params": {**params, "inputResponses": {"approval": answer}, "requestState": state},
        }
        server.send_raw(json.dumps(message).encode("ascii") + b"\n")
        declined = server.response(904)["result"]["structuredContent"]
        assert declined["declined"]["comment"] == "redo \\ud800 it", declined
        shown = subprocess.run(
            [sys.executable, "-m", "handrail", "runs", "show", run, "--format", "json"],
            env=clean_env(server.folder), cwd=server.folder, capture_output=True, timeout=60, check=True,
        )  # fmt: skip
        events = json.loads(shown.stdout.decode("utf-8"))["events"]
        assert [e["comment"] for e in events if e["type"] == "declined"] == ["redo \\ud800 it"]
