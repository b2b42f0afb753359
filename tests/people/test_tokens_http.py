"""A token per person over `handrail serve`: the bearer token decides who is asking, and
nobody can see or move anybody else's run (issue 17)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handrail.cli import main
from handrail.service.people import token_line
from tests.helpers.http import HttpServer
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

pytestmark = pytest.mark.slow  # one server per module, its tests in order

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-fedcba9876543210xyz"
SHARED = "shared-token-for-everyone-1234"


def as_(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HttpServer, Path]]:
    folder = tmp_path_factory.mktemp("people")
    write(folder / "flows", build_feature())
    write(folder / "flows", ASK_A_PERSON)
    tokens = folder / "tokens"
    # alice's line holds only the hash of her token, bob's the token itself
    tokens.write_text(f"# the team\n\n{token_line('alice', ALICE)}\nbob   {BOB}\n", "utf-8")
    database = folder / "runs.db"
    with HttpServer(
        "--no-bundled",
        "--workflows",
        str(folder / "flows"),
        "--database",
        f"sqlite:///{database}",
        "--tokens",
        str(tokens),
        "--log-level",
        "debug",
        env={"HANDRAIL_TOKEN": SHARED},
    ) as server:
        yield server, database


ASK_A_PERSON = {
    "id": "ask-a-person",
    "name": "Ask a person",
    "description": "A plan a person approves.",
    "version": "1.0.0",
    "steps": [
        {"id": "plan", "title": "Plan", "prompt": "Write the plan.", "requireConfirmation": True},
        {"id": "build", "title": "Build", "prompt": "Build it."},
    ],
}


def start(server: HttpServer, token: str, goal: str) -> str:
    started = server.rpc(
        "workflow_start",
        {"workflowId": WORKFLOW_ID, "goal": goal, "context": {"parts": ["one"]}},
        headers=as_(token),
    )
    run_id: str = started["result"]["runId"]
    return run_id


def run_not_found(reply: dict[str, Any], run_id: str) -> bool:
    return reply.get("error") == {"code": -32008, "message": "Run not found", "data": {"runId": run_id}}


def test_one_person_cannot_see_resume_continue_or_abandon_anothers_run(
    served: tuple[HttpServer, Path],
) -> None:
    server, _ = served
    alices = start(server, ALICE, "Alice's feature")
    bobs = start(server, BOB, "Bob's feature")

    listed = server.rpc("workflow_resume", {}, headers=as_(BOB))["result"]["runs"]
    assert bobs in [r["runId"] for r in listed] and alices not in [r["runId"] for r in listed]
    listed = server.rpc("workflow_resume", {}, headers=as_(ALICE))["result"]["runs"]
    assert alices in [r["runId"] for r in listed] and bobs not in [r["runId"] for r in listed]

    assert run_not_found(server.rpc("workflow_resume", {"runId": alices}, headers=as_(BOB)), alices)
    moved = server.rpc(
        "workflow_continue", {"runId": alices, "stepId": "plan", "output": "Plan: Bob's."}, headers=as_(BOB)
    )
    assert run_not_found(moved, alices)
    ended = server.rpc("workflow_abandon", {"runId": alices, "reason": "mine now"}, headers=as_(BOB))
    assert run_not_found(ended, alices)
    # the shared HANDRAIL_TOKEN is one more identity, no key to everybody's runs
    assert run_not_found(server.rpc("workflow_resume", {"runId": alices}, headers=as_(SHARED)), alices)

    # alice's run is untouched, and hers to move
    own = server.rpc(
        "workflow_continue", {"runId": alices, "stepId": "plan", "output": "Plan: one."}, headers=as_(ALICE)
    )
    assert own["result"]["accepted"] is True and own["result"]["step"]["id"] == "build"


def test_the_person_asking_is_recorded_on_every_event_and_the_local_cli_sees_every_owner(
    served: tuple[HttpServer, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    server, database = served
    run_id = start(server, BOB, "Recorded")
    server.rpc(
        "workflow_continue", {"runId": run_id, "stepId": "plan", "output": "Plan: one."}, headers=as_(BOB)
    )
    with sqlite3.connect(database) as db:
        owner = db.execute("SELECT owner FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
        actors = [a for (a,) in db.execute("SELECT actor FROM run_events WHERE run_id = ?", (run_id,))]
    assert owner == "bob" and len(actors) >= 2 and set(actors) == {"bob"}

    assert main(["runs", "list", "--database", f"sqlite:///{database}", "--format", "json"]) == 0
    owners = {r["owner"] for r in json.loads(capsys.readouterr().out)["runs"]}
    assert {"alice", "bob"} <= owners
    assert main(["runs", "show", run_id, "--database", f"sqlite:///{database}"]) == 0
    assert "Recorded" in capsys.readouterr().out


def test_an_unknown_or_missing_token_is_401_saying_which(served: tuple[HttpServer, Path]) -> None:
    server, _ = served
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers, why in (
        ({}, "a bearer token is required"),
        (as_("not-anybodys-token-at-all"), "the bearer token is not recognised"),
        ({"Authorization": f"Basic {ALICE}"}, "the Authorization header must read `Bearer <token>`"),
    ):
        response = server.post(message, headers)
        assert response.status_code == 401, headers
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.json()["error"]["message"] == f"Unauthorized: {why}"
    wrong = server.post(message, as_("not-anybodys-token-at-all")).headers["www-authenticate"]
    assert wrong == 'Bearer realm="handrail", error="invalid_token"'
    assert server.post(message, as_(ALICE)).status_code == 200
    assert server.post(message, {"Authorization": f"bearer {BOB}"}).status_code == 200


def test_no_token_ever_appears_in_the_servers_log(served: tuple[HttpServer, Path]) -> None:
    server, _ = served
    server.rpc("tools/list", headers=as_(ALICE))
    server.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, as_("wrong-token-0123456789abcdef"))
    log = server.stderr
    assert "DEBUG" in log  # the log was at debug level, and says something
    for token in (ALICE, BOB, SHARED, "wrong-token-0123456789abcdef"):
        assert token not in log


def test_a_person_at_the_terminal_approves_and_declines_runs_started_under_a_token(
    served: tuple[HttpServer, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    server, database = served
    url = f"sqlite:///{database}"
    waiting = []
    for goal in ("Approve me", "Decline me"):
        run_id = server.rpc(
            "workflow_start", {"workflowId": "ask-a-person", "goal": goal}, headers=as_(ALICE)
        )["result"]["runId"]
        plan = {"runId": run_id, "stepId": "plan", "output": "Plan: one."}
        asked = server.rpc("workflow_continue", plan, headers=as_(ALICE))
        assert asked["result"]["status"] == "awaiting_approval", asked
        waiting.append(run_id)
    approved, declined = waiting

    assert main(["runs", "approve", approved, "--database", url, "--as", "carol"]) == 0
    assert capsys.readouterr().out == f"run {approved}: approved by carol; now at step build\n"
    assert main(["runs", "decline", declined, "--database", url, "--as", "carol"]) == 0
    assert "declined by carol" in capsys.readouterr().out

    # the run is still alice's, and moves on for her
    after = server.rpc("workflow_resume", {"runId": approved}, headers=as_(ALICE))["result"]
    assert after["step"]["id"] == "build", after
    with sqlite3.connect(database) as db:
        owner = db.execute("SELECT owner FROM runs WHERE id = ?", (approved,)).fetchone()[0]
    assert owner == "alice"
