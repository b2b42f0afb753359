"""Notifications end to end: a real `handrail serve` (and `handrail runs`, `handrail
notify test`) posting to a real local HTTP receiver (tests/helpers/receiver.py). Every
event type, each format, the signature checked by the Standard Webhooks library,
retries while the receiver is down, `kill -9` during delivery, and two servers on one
PostgreSQL database."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks import Webhook

from tests.helpers.http import HttpServer
from tests.helpers.receiver import Received, Receiver
from tests.helpers.server import Server, clean_env

pytestmark = pytest.mark.slow

FLOW = "notified"
SECRET = "a shared secret"
WORKFLOW = {
    "id": FLOW,
    "name": "Notified",
    "description": "A step with a check, then one a person approves.",
    "version": "1.0.0",
    "steps": [
        {
            "id": "build",
            "title": "Build it",
            "prompt": "Build.",
            "checks": [{"type": "file", "path": "built.txt", "message": "It is built"}],
        },
        {"id": "review", "title": "Review it", "prompt": "Ask for review.", "requireConfirmation": True},
    ],
}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as r:
        yield r


@pytest.fixture
def place(tmp_path: Path) -> Path:
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / f"{FLOW}.json").write_text(json.dumps(WORKFLOW))
    (tmp_path / "workspace").mkdir()
    return tmp_path


def serve(place: Path, *args: str, database: str | None = None) -> HttpServer:
    return HttpServer(
        "--no-bundled",
        "--workflows",
        str(place / "flows"),
        "--database",
        database or f"sqlite:///{place / 'runs.db'}",
        *args,
    )


def call(server: HttpServer, tool: str, **arguments: Any) -> dict[str, Any]:
    reply = server.modern("tools/call", {"name": tool, "arguments": arguments}).json()
    result: dict[str, Any] = reply["result"]["structuredContent"]
    assert not reply["result"].get("isError"), result
    return result


def start(server: HttpServer, place: Path) -> str:
    run_id: str = call(
        server, "workflow_start", workflowId=FLOW, goal="ship it", workspace=str(place / "workspace")
    )["runId"]
    return run_id


def handrail(place: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handrail", *args],
        env=clean_env(place) | (env or {}),
        cwd=place,
        capture_output=True,
        text=True,
        timeout=60,
    )


def verified(received: Received, secret: str = SECRET) -> Any:
    """The body, once the Standard Webhooks library (not handrail's code) accepts its signature."""
    key = "whsec_" + base64.b64encode(secret.encode()).decode()
    return Webhook(key).verify(received.body, received.headers)


def test_every_run_event_reaches_the_receiver_signed_in_order_naming_run_step_person_and_link(
    place: Path, receiver: Receiver
) -> None:
    hook = receiver.url + "/hook"
    with serve(
        place, "--notify", hook, "--notify-secret", SECRET, "--public-url", "https://handrail.example/"
    ) as s:
        run = start(s, place)
        for _ in range(4):  # the fourth failure in a row is not reported again
            assert (
                call(s, "workflow_continue", runId=run, stepId="build", output="tried")["accepted"] is False
            )
        (place / "workspace" / "built.txt").write_text("built")
        call(s, "workflow_continue", runId=run, stepId="build", output="built")
        assert call(s, "workflow_continue", runId=run, stepId="review", output="please")["status"] == (
            "awaiting_approval"
        )
        queued = {"HANDRAIL_NOTIFY": hook}  # `handrail runs` queues; the server delivers
        db = ["--database", f"sqlite:///{place / 'runs.db'}"]
        said = handrail(
            place, "runs", "decline", run, "--as", "dana", "--comment", "not yet", *db, env=queued
        )
        assert said.returncode == 0, said.stderr
        call(s, "workflow_continue", runId=run, stepId="review", output="now?")
        said = handrail(place, "runs", "approve", run, "--as", "alice", *db, env=queued)
        assert said.returncode == 0, said.stderr
        other = start(s, place)
        call(s, "workflow_abandon", runId=other, reason="wrong goal")
        got = receiver.wait_for(7)
        time.sleep(1)
        assert len(receiver.received) == 7  # nothing more, nothing twice
    bodies = [verified(r) for r in got]
    kinds = [b["type"] for b in bodies if b["run"]["id"] == run]
    assert kinds == [
        "run.check_failing",
        "run.awaiting_approval",
        "run.declined",
        "run.awaiting_approval",
        "run.approved",
        "run.completed",
    ]
    assert [b["type"] for b in bodies if b["run"]["id"] == other] == ["run.abandoned"]
    by_type = {b["type"]: b for b in bodies}
    failing = by_type["run.check_failing"]
    assert failing["step"] == {"id": "build", "title": "Build it"}
    assert failing["details"]["failures"] == 3 and failing["details"]["check"]["message"] == "It is built"
    assert (
        by_type["run.declined"]["person"] == "dana"
        and by_type["run.declined"]["details"]["comment"] == "not yet"
    )
    assert by_type["run.approved"]["person"] == "alice"
    assert by_type["run.approved"]["step"] == {"id": "review", "title": "Review it"}
    assert by_type["run.abandoned"]["details"]["reason"] == "wrong goal"
    for body, received in zip(bodies, got, strict=True):
        assert body["run"]["workflowId"] == FLOW and body["run"]["goal"] == "ship it"
        assert body["link"] == f"https://handrail.example/runs/{body['run']['id']}"
        assert body["id"] == received.headers["webhook-id"] == received.headers["idempotency-key"]
    assert len({b["id"] for b in bodies}) == 7


def test_slack_and_teams_receivers_get_their_services_messages_with_the_run_and_its_link(
    place: Path, receiver: Receiver
) -> None:
    with serve(
        place, "--notify", f"slack:{receiver.url}/slack", "--notify", f"teams:{receiver.url}/teams"
    ) as s:
        run = start(s, place)
        call(s, "workflow_abandon", runId=run, reason="done for today")
        link = f"{s.base}/runs/{run}"
        (slack,) = receiver.wait_for(1, path="/slack")
        (teams,) = receiver.wait_for(1, path="/teams")
    message = slack.json
    # the agent's workflow_abandon (over MCP), told apart from a person's `handrail runs abandon`
    assert message["text"].startswith(
        f"Run {run} ({FLOW}) was abandoned at step Build it, by an agent of local (session http-connection:"
    )
    fields = [f["text"] for f in message["blocks"][1]["fields"]]
    assert fields[:4] == [f"*Workflow*\n{FLOW}", f"*Run*\n{run}", "*Step*\nBuild it", "*Person*\nlocal"]
    assert "*Reason*\ndone for today" in fields and "*By*\nagent" in fields
    (button,) = message["blocks"][2]["elements"]
    assert button["type"] == "button" and button["url"] == link
    (attachment,) = teams.json["attachments"]
    assert teams.json["type"] == "message"
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = attachment["content"]
    assert card["type"] == "AdaptiveCard" and card["body"][0]["text"] == message["text"]
    facts = {f["title"]: f["value"] for f in card["body"][1]["facts"]}
    assert facts.pop("Session").startswith("http-connection:")
    assert facts == {
        "Workflow": FLOW,
        "Run": run,
        "Step": "Build it",
        "Person": "local",
        "Reason": "done for today",
        "By": "agent",
    }
    assert card["actions"] == [{"type": "Action.OpenUrl", "title": "Open the run", "url": link}]
    assert "webhook-signature" not in slack.headers  # no secret given: unsigned


def test_a_receiver_that_is_down_gets_everything_in_order_per_run_once_it_is_back(
    place: Path, receiver: Receiver
) -> None:
    receiver.stop()
    with serve(place, "--notify", receiver.url) as s:
        runs = [start(s, place) for _ in range(3)]
        for _ in range(3):  # the third failure in a row is reported
            for run in runs:
                call(s, "workflow_continue", runId=run, stepId="build", output="tried")
        for run in runs:
            call(s, "workflow_abandon", runId=run, reason="stopped")
        deadline = time.monotonic() + 20
        database = f"sqlite:///{place / 'runs.db'}"
        while "notification" not in (
            shown := handrail(place, "runs", "show", runs[0], "--database", database).stdout
        ):
            assert time.monotonic() < deadline, shown
            time.sleep(0.5)
        assert f"notification run.abandoned to {receiver.url}: not delivered after" in shown or (
            f"notification run.check_failing to {receiver.url}: not delivered after" in shown
        )
        assert "cannot reach" in shown
        page = s.client.get(f"{s.base}/runs/{runs[0]}")
        assert "Notifications not delivered" in page.text and "cannot reach" in page.text
        receiver.start()
        got = receiver.wait_for(6, timeout=60)
    per_run = {run: [r.json["type"] for r in got if r.json["run"]["id"] == run] for run in runs}
    assert per_run == {run: ["run.check_failing", "run.abandoned"] for run in runs}


def test_a_run_idle_longer_than_stuck_after_is_notified_once_per_pause(
    place: Path, receiver: Receiver
) -> None:
    with serve(place, "--notify", receiver.url, "--stuck-after", "1s") as s:
        run = start(s, place)
        (first,) = receiver.wait_for(1)
        time.sleep(2.5)  # several scans later: still the one notification
        assert len(receiver.received) == 1
        call(s, "workflow_continue", runId=run, stepId="build", output="tried")  # moves, then idles again
        second = receiver.wait_for(2)[1]
    assert first.json["type"] == second.json["type"] == "run.stuck"
    assert first.json["step"] == {"id": "build", "title": "Build it"}
    assert first.json["details"]["stuckAfterSeconds"] == 1
    assert first.json["details"]["idleSince"] < second.json["details"]["idleSince"]


def test_kill_9_during_delivery_loses_no_notification_and_repeats_only_with_the_same_id(
    place: Path, receiver: Receiver
) -> None:
    receiver.delay = 3.0  # each answer comes late: the server is killed while one is being sent
    s = serve(place, "--notify", receiver.url)
    try:
        runs = [start(s, place) for _ in range(5)]
        for run in runs:
            call(s, "workflow_abandon", runId=run, reason="stop")
        receiver.wait_for(1)  # a POST in flight
        s.proc.kill()
        s.proc.wait(10)
    finally:
        s.close()
    receiver.delay = 0.0
    database = f"sqlite:///{place / 'runs.db'}"

    def outbox() -> dict[str, str]:
        shown = [
            json.loads(
                handrail(place, "runs", "show", run, "--format", "json", "--database", database).stdout
            )
            for run in runs
        ]
        return {n["id"]: n["state"] for doc in shown for n in doc["notifications"]}

    with serve(place, "--notify", receiver.url) as again:
        deadline = time.monotonic() + 90  # a SQLite claim of the killed server lasts 30 s
        while set((queued := outbox()).values()) != {"delivered"}:
            assert time.monotonic() < deadline, (queued, again.stderr)
            time.sleep(1)
    assert len(queued) == 5
    ids = [r.headers["webhook-id"] for r in receiver.received]
    assert set(ids) == set(queued)
    assert ids.count(ids[0]) == 2  # the one in flight at the kill came again, with its id
    for r in receiver.received:  # a repeat is the same notification: same id, same event
        assert r.json["id"] == r.headers["webhook-id"] and r.json["type"] == "run.abandoned"


def test_two_servers_on_one_postgresql_database_deliver_each_notification_once(
    place: Path, receiver: Receiver, postgres_url: str
) -> None:
    with (
        serve(place, "--notify", receiver.url, database=postgres_url) as one,
        serve(place, "--notify", receiver.url, database=postgres_url) as two,
    ):
        runs = [start(server, place) for server in (one, two) * 5]
        for i, run in enumerate(runs):
            call((two, one)[i % 2], "workflow_abandon", runId=run, reason="stop")
        receiver.wait_for(10)
        time.sleep(2)  # any second delivery would arrive meanwhile
    ids = [r.headers["webhook-id"] for r in receiver.received]
    assert len(ids) == 10 and len(set(ids)) == 10
    assert sorted(r.json["run"]["id"] for r in receiver.received) == sorted(runs)


def test_notify_test_sends_a_signed_sample_and_says_how_it_went(place: Path, receiver: Receiver) -> None:
    said = handrail(place, "notify", "test", receiver.url + "/sample", "--notify-secret", SECRET)
    assert said.returncode == 0, said.stderr
    assert said.stdout.strip() == f"delivered a sample json notification (signed) to {receiver.url}/sample"
    (sample,) = receiver.wait_for(1)
    body = verified(sample)
    assert body["type"] == "test" and body["run"]["workflowId"] == "sample-workflow"
    receiver.status = 500
    said = handrail(place, "notify", "test", f"teams:{receiver.url}/down")
    assert said.returncode == 1
    assert said.stderr.strip() == f"handrail notify test: {receiver.url}/down: not delivered: HTTP 500: ok"
    receiver.stop()
    said = handrail(place, "notify", "test", receiver.url)
    assert (
        said.returncode == 1 and f"{receiver.url}: not delivered: cannot reach the receiver: " in said.stderr
    )


def test_a_notify_value_that_is_not_an_http_url_stops_the_server_naming_it(place: Path) -> None:
    said = handrail(place, "serve", "--port", "0", "--notify", "slack:ftp://files.example/x")
    assert said.returncode == 2
    assert said.stderr.strip() == (
        "handrail serve: --notify: 'slack:ftp://files.example/x' is not an http(s) URL; "
        "write https://host/path, slack:https://... or teams:https://..."
    )
    said = handrail(place, "start", "--stuck-after", "soon")
    assert said.returncode == 2 and "'soon' is not a duration" in said.stderr


def test_a_stdio_server_notifies_and_keeps_stdout_for_protocol_messages_only(
    place: Path, receiver: Receiver
) -> None:
    database = f"sqlite:///{place / 'runs.db'}"
    flows = str(place / "flows")
    with Server("--no-bundled", "--workflows", flows, "--database", database, "--notify", receiver.url) as s:
        s.initialize()
        run = s.call(
            "workflow_start", {"workflowId": FLOW, "goal": "ship it", "workspace": str(place / "workspace")}
        )
        run_id = run["structuredContent"]["runId"]
        s.call("workflow_abandon", {"runId": run_id, "reason": "by stdio"})
        (got,) = receiver.wait_for(1)
        assert s.violations == []
    assert got.json["type"] == "run.abandoned" and got.json["run"]["id"] == run_id
    assert got.json["link"] is None  # `start` serves no dashboard: give --public-url for links


def test_the_dashboard_command_takes_the_notification_options_and_refuses_a_bad_one(place: Path) -> None:
    said = handrail(
        place, "dashboard", "--port", "0", "--notify", "https://ok.example/", "--public-url", "nope"
    )
    assert said.returncode == 2
    assert said.stderr.strip() == "handrail dashboard: --public-url: 'nope' is not an http(s) URL"
