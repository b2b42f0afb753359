"""PostgreSQL as users meet it: `--database postgresql://...` on `handrail runs` and
`handrail serve`, and a database that refuses the password, which is never shown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from handrail.cli import main
from tests.helpers.http import HttpServer
from tests.postgres import PASSWORD, Cluster
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

pytestmark = pytest.mark.slow


def test_a_run_made_over_http_on_postgresql_is_listed_and_abandoned_by_the_cli(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "flows", build_feature())
    flows = ("--no-bundled", "--workflows", str(tmp_path / "flows"))
    with HttpServer(*flows, "--database", postgres_url) as http:
        started = http.rpc(
            "workflow_start",
            {"workflowId": WORKFLOW_ID, "goal": "Over PostgreSQL", "workspace": str(tmp_path)},
        )["result"]
    run = started["runId"]
    assert main(["runs", "list", "--database", postgres_url, "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)["runs"]
    assert [r["runId"] for r in listed] == [run]
    assert main(["runs", "abandon", run, "--reason", "done here", "--database", postgres_url]) == 0
    capsys.readouterr()
    assert main(["runs", "show", run, "--database", postgres_url, "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["run"]["status"] == "abandoned"
    assert [e["type"] for e in shown["events"]] == ["started", "abandoned"]


def test_a_refused_password_is_a_storage_error_that_never_shows_it(
    tmp_path: Path, postgres_cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = postgres_cluster.url(password="not-the-" + PASSWORD)
    write(tmp_path / "flows", build_feature())
    with HttpServer("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", wrong) as http:
        answer = http.rpc("workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Refused"})
        assert answer["error"]["code"] == -32006, answer
        assert "password authentication failed" in answer["error"]["message"] + json.dumps(answer)
        assert "not-the-" not in json.dumps(answer) and "not-the-" not in http.stderr
        assert http.rpc("tools/list")["result"]["tools"], "the other tools still answer"
    assert main(["runs", "list", "--database", wrong]) == 1
    out, err = capsys.readouterr()
    assert "password authentication failed" in err and "not-the-" not in out + err


def test_a_server_whose_database_connections_were_dropped_reconnects_on_the_next_call(
    tmp_path: Path, postgres_url: str
) -> None:
    import psycopg

    write(tmp_path / "flows", build_feature())
    flows = ("--no-bundled", "--workflows", str(tmp_path / "flows"))

    def start(goal: str) -> Any:
        arguments = {"workflowId": WORKFLOW_ID, "goal": goal, "workspace": str(tmp_path)}
        return http.rpc("workflow_start", arguments)

    with HttpServer(*flows, "--database", postgres_url) as http:
        first = start("Before")
        assert "result" in first, first
        # what a database restart or an idle-connection cut does to the server's pool
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            ended = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()
        assert ended is not None and ended[0] >= 1, "the server held a pooled connection"
        again = start("After")
        assert "result" in again, again
