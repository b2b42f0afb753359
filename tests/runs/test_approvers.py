"""Who may approve (spec/runs.md, "Who may approve"), through real clients: a real
`handrail serve` with a tokens file, its /mcp, its dashboard, its JSON API, and
`handrail runs approve --as` run as its own process on the same store."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.http import HttpServer
from tests.helpers.server import clean_env
from tests.runs.workflows import write

pytestmark = pytest.mark.slow

TOKENS = {
    "alice": ("alice-token-0123456789abcdef", "roles=qa scope=person"),
    "bob": ("bob-token-0123456789abcdef", "roles=lead scope=person"),
    "carol": ("carol-token-0123456789abcdef", "roles=lead,qa scope=person"),
    "erin": ("erin-token-0123456789abcdef", "roles=lead"),  # no scope: both
    "frank": ("frank-token-0123456789abcdef", "roles=oncall scope=person"),
    "gina": ("gina-token-0123456789abcdef", "scope=person"),
    "robot": ("robot-token-0123456789abcdef", "roles=lead scope=agent"),
}


def release() -> dict[str, Any]:
    """Two different people, alice or a lead, not the one who started the run."""
    return {
        "id": "release",
        "name": "Release",
        "description": "A release two people sign off.",
        "version": "1.0.0",
        "separateApprover": True,
        "steps": [
            {
                "id": "ship",
                "title": "Ship",
                "prompt": "Ship it.",
                "requireConfirmation": True,
                "approvers": ["alice", "role:lead"],
                "approvals": 2,
            },
            {"id": "tell", "title": "Tell", "prompt": "Tell everyone."},
        ],
    }


def hotfix(after: str = "2s") -> dict[str, Any]:
    """alice approves; after a while, whoever is on call may too."""
    return {
        "id": "hotfix",
        "name": "Hotfix",
        "description": "A fix alice signs off, or on call once she has not.",
        "version": "1.0.0",
        "steps": [
            {
                "id": "patch",
                "title": "Patch",
                "prompt": "Patch it.",
                "requireConfirmation": True,
                "approvers": ["alice"],
                "escalateAfter": {"after": after, "role": "oncall"},
            },
            {"id": "tell", "title": "Tell", "prompt": "Tell everyone."},
        ],
    }


def serve_args(tmp_path: Path, *extra: str) -> tuple[str, ...]:
    for document in (release(), hotfix()):
        write(tmp_path / "flows", document)
    lines = [f"{name} {token} {rest}" for name, (token, rest) in TOKENS.items()]
    (tmp_path / "tokens").write_text("\n".join(lines) + "\n", "utf-8")
    return (
        "--no-bundled",
        "--workflows",
        str(tmp_path / "flows"),
        "--database",
        f"sqlite:///{tmp_path / 'r.db'}",
        "--tokens",
        str(tmp_path / "tokens"),
        *extra,
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[HttpServer]:
    with HttpServer(*serve_args(tmp_path)) as http:
        yield http


def bearer(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[name][0]}"}


def waiting_run(http: HttpServer, workflow: str, step: str, starter: str = "erin") -> str:
    """A run `starter` started over /mcp, waiting for approval of `step`."""
    started = http.rpc("workflow_start", {"workflowId": workflow, "goal": "Go"}, headers=bearer(starter))
    run_id: str = started["result"]["runId"]
    done = http.rpc(
        "workflow_continue", {"runId": run_id, "stepId": step, "output": "Done."}, headers=bearer(starter)
    )
    assert done["result"]["status"] == "awaiting_approval", done
    return run_id


def api(
    http: HttpServer, run_id: str, verb: str, who: str | None, comment: str | None = None
) -> httpx.Response:
    headers = {"Content-Type": "application/json", **(bearer(who) if who else {})}
    body = {"comment": comment} if comment else {}
    return http.client.post(f"{http.base}/api/runs/{run_id}/{verb}", json=body, headers=headers)


def events(http: HttpServer, run_id: str, tmp_path: Path) -> list[dict[str, Any]]:
    shown = cli(tmp_path, "show", run_id, "--format", "json")
    assert shown.returncode == 0, shown.stderr
    found: list[dict[str, Any]] = json.loads(shown.stdout)["events"]
    return found


def cli(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handrail", "runs", *argv, "--database", f"sqlite:///{tmp_path / 'r.db'}"],
        capture_output=True,
        text=True,
        env=clean_env(tmp_path),
        timeout=60,
    )


def signed_in(http: HttpServer, who: str) -> tuple[httpx.Client, str]:
    client = httpx.Client(base_url=http.base, timeout=15)
    reply = client.post(
        "/signin", data={"token": TOKENS[who][0]}, headers={"Origin": http.base}, follow_redirects=False
    )
    assert reply.status_code == 303 and "failed" not in reply.headers["location"], reply.headers
    found = re.search(r'name="csrf" value="([^"]+)"', client.get("/").text)
    assert found is not None
    return client, found.group(1)


def status(http: HttpServer, run_id: str) -> str:
    shown = http.client.get(f"{http.base}/api/runs/{run_id}", headers=bearer("erin"))
    value: str = shown.json()["status"]
    return value


def test_a_person_the_step_does_not_name_is_refused_by_the_api_the_dashboard_and_the_cli(
    served: HttpServer, tmp_path: Path
) -> None:
    run_id = waiting_run(served, "release", "ship")
    refused = api(served, run_id, "approve", "gina")
    assert refused.status_code == 403, refused.text
    assert refused.json()["rule"] == "approvers" and "gina" in refused.json()["error"]
    gina, csrf = signed_in(served, "gina")
    try:
        assert gina.get(f"/runs/{run_id}").status_code == 404  # not hers, and not hers to approve
        posted = gina.post(f"/runs/{run_id}/approve", data={"csrf": csrf}, headers={"Origin": served.base})
        note = gina.get(posted.headers["location"]).text
        assert "approvers: gina is not among this step&#39;s approvers" in note
    finally:
        gina.close()
    by_cli = cli(tmp_path, "approve", run_id, "--as", "gina", "--tokens", str(tmp_path / "tokens"))
    assert by_cli.returncode == 1
    assert "approvers: gina is not among this step's approvers: alice, role:lead" in by_cli.stderr
    assert status(served, run_id) == "awaiting_approval"
    assert not [e for e in events(served, run_id, tmp_path) if e["type"].startswith("approv")]


def test_a_quorum_of_two_needs_two_different_people_and_records_each_with_its_channel(
    served: HttpServer, tmp_path: Path
) -> None:
    run_id = waiting_run(served, "release", "ship")
    first = api(served, run_id, "approve", "bob", "Looks right")
    assert first.status_code == 200, first.text
    assert first.json()["status"] == "awaiting_approval"
    assert first.json()["approvals"] == {"given": ["bob"], "needed": 2}
    again = api(served, run_id, "approve", "bob")
    assert again.status_code == 403 and again.json()["rule"] == "approvals"
    by_cli = cli(tmp_path, "approve", run_id, "--as", "alice", "--tokens", str(tmp_path / "tokens"))
    assert by_cli.returncode == 0, by_cli.stderr
    assert status(served, run_id) == "active"
    log = events(served, run_id, tmp_path)
    given = next(e for e in log if e["type"] == "approval_given")
    approved = next(e for e in log if e["type"] == "approved")
    assert (given["person"], given["via"], given["comment"]) == (
        "bob",
        "api",
        "Looks right",
    )
    assert (approved["person"], approved["via"]) == ("alice", "cli")
    assert approved["approvers"] == ["bob", "alice"]


def test_the_person_who_started_the_run_cannot_approve_where_separate_approver_holds(
    served: HttpServer,
) -> None:
    run_id = waiting_run(served, "release", "ship", starter="erin")  # erin holds role lead
    refused = api(served, run_id, "approve", "erin")
    assert refused.status_code == 403, refused.text
    assert refused.json()["rule"] == "separateApprover"
    assert "erin started this run" in refused.json()["error"]
    assert status(served, run_id) == "awaiting_approval"


def test_escalation_adds_the_role_to_the_approvers_once_its_time_has_come(served: HttpServer) -> None:
    run_id = waiting_run(served, "hotfix", "patch")
    early = api(served, run_id, "approve", "frank")
    assert early.status_code == 403 and early.json()["rule"] == "approvers", early.text
    time.sleep(2.2)  # escalateAfter 2s
    later = api(served, run_id, "approve", "frank")
    assert later.status_code == 200, later.text
    assert later.json()["status"] == "active"


def test_a_decline_by_an_allowed_person_ends_the_wait_whatever_the_quorum(served: HttpServer) -> None:
    run_id = waiting_run(served, "release", "ship")
    assert api(served, run_id, "approve", "bob").status_code == 200
    declined = api(served, run_id, "decline", "carol", "Not on a Friday")
    assert declined.status_code == 200, declined.text
    assert declined.json()["status"] == "active" and "Not on a Friday" in declined.json()["issues"][0]


def test_an_agent_scoped_token_reaches_mcp_but_can_neither_sign_in_nor_approve(served: HttpServer) -> None:
    run_id = waiting_run(served, "release", "ship", starter="robot")  # /mcp takes it
    signin = served.client.post(
        f"{served.base}/signin",
        data={"token": TOKENS["robot"][0]},
        headers={"Origin": served.base},
        follow_redirects=False,
    )
    assert signin.status_code == 303 and "failed=agent" in signin.headers["location"]
    assert "reaches /mcp only" in served.client.get(served.base + signin.headers["location"]).text
    listing = served.client.get(f"{served.base}/api/runs", headers=bearer("robot"))
    assert listing.status_code == 403 and listing.json()["rule"] == "scope"
    approve = api(served, run_id, "approve", "robot")
    assert approve.status_code == 403 and "scope is `agent`" in approve.json()["error"]
    person_at_mcp = served.rpc("tools/list", {}, headers=bearer("alice"))
    assert "scope is `person`" in person_at_mcp["error"]["message"]


def test_the_api_wants_a_persons_bearer_token_and_a_json_body(served: HttpServer) -> None:
    run_id = waiting_run(served, "release", "ship")
    assert api(served, run_id, "approve", None).status_code == 401
    wrong = served.client.post(
        f"{served.base}/api/runs/{run_id}/approve",
        content="comment=hi",
        headers={
            **bearer("bob"),
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    assert wrong.status_code == 415
    assert api(served, "run_" + "0" * 32, "approve", "bob").status_code == 404


def test_a_channel_left_out_of_approval_channels_is_refused_naming_the_option(tmp_path: Path) -> None:
    with HttpServer(*serve_args(tmp_path, "--approval-channels", "api")) as http:
        run_id = waiting_run(http, "release", "ship")
        alice, csrf = signed_in(http, "alice")
        try:
            page = alice.get(f"/runs/{run_id}").text
            assert 'id="approve"' not in page and "--approval-channels" in page
            posted = alice.post(f"/runs/{run_id}/approve", data={"csrf": csrf}, headers={"Origin": http.base})
            note = alice.get(posted.headers["location"]).text
            assert "--approval-channels: this server takes approvals from api, not from `dashboard`" in note
        finally:
            alice.close()
        by_cli = cli(tmp_path, "approve", run_id, "--as", "alice", "--tokens", str(tmp_path / "tokens"))
        assert by_cli.returncode == 1
        assert (
            "--approval-channels: the server that started this run takes approvals from api" in by_cli.stderr
        )
        assert api(http, run_id, "approve", "alice").status_code == 200


def test_an_unknown_approval_channel_is_a_usage_error_naming_the_choices(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "serve", "--approval-channels", "dashboard,phone"],
        capture_output=True,
        text=True,
        env=clean_env(tmp_path),
        timeout=60,
    )
    assert done.returncode == 2
    assert "`phone` is not a channel; choose from dashboard, cli, elicitation, api" in done.stderr


def test_an_approver_sees_the_run_waiting_for_them_and_the_dashboard_records_its_channel(
    served: HttpServer, tmp_path: Path
) -> None:
    run_id = waiting_run(served, "hotfix", "patch")
    alice, csrf = signed_in(served, "alice")
    gina, _ = signed_in(served, "gina")
    try:
        home = alice.get("/").text
        assert "Waiting for you" in home and run_id in home
        assert "Waiting for you" not in gina.get("/").text
        posted = alice.post(f"/runs/{run_id}/approve", data={"csrf": csrf}, headers={"Origin": served.base})
        assert "Approved." in alice.get(posted.headers["location"]).text
    finally:
        alice.close()
        gina.close()
    approved = next(e for e in events(served, run_id, tmp_path) if e["type"] == "approved")
    assert (approved["person"], approved["via"]) == ("alice", "dashboard")


def test_a_waiting_approval_is_reminded_and_escalated_as_its_times_pass(tmp_path: Path) -> None:
    write(tmp_path / "flows", {**hotfix("1s"), "id": "nudged"})
    nudged = tmp_path / "flows" / "nudged.json"
    document = json.loads(nudged.read_text("utf-8"))
    document["steps"][0]["remindAfter"] = "1s"
    nudged.write_text(json.dumps(document), "utf-8")
    with HttpServer(*serve_args(tmp_path)) as http:
        run_id = waiting_run(http, "nudged", "patch")
        deadline = time.monotonic() + 30  # the server looks every few seconds
        kinds: list[str] = []
        while time.monotonic() < deadline and not {"reminded", "escalated"} <= set(kinds):
            time.sleep(0.5)
            kinds = [e["type"] for e in events(http, run_id, tmp_path)]
        assert kinds.count("escalated") == 1 and "reminded" in kinds, kinds
        reminded = next(e for e in events(http, run_id, tmp_path) if e["type"] == "reminded")
        assert reminded["approvers"] == ["alice", "role:oncall"] or reminded["approvers"] == ["alice"]
        assert status(http, run_id) == "awaiting_approval"


def test_the_agents_client_is_not_asked_where_elicitation_is_left_out_and_its_answer_is_refused(
    tmp_path: Path,
) -> None:
    from tests.runs.test_approval_answers import ACCEPT, _modern, _server, _start

    server = _server(tmp_path, "--approval-channels", "dashboard,cli")
    try:
        run = _start(server)
        plan = {"runId": run, "stepId": "plan", "output": "Plan: one."}
        waiting = _modern(server, plan)
        assert waiting.get("resultType") != "input_required"
        assert waiting["structuredContent"]["status"] == "awaiting_approval"
        refused = _modern(
            server, {"runId": run, "stepId": "plan"}, inputResponses=ACCEPT, requestState=f"{run}:1:x"
        )
        assert refused["isError"] is True
        assert server.result("workflow_resume", {"runId": run})["status"] == "awaiting_approval"
    finally:
        server.close()


def test_an_answer_through_the_client_records_input_required_as_its_channel(tmp_path: Path) -> None:
    from tests.runs.test_approval_answers import ACCEPT, _events, _modern, _server, _start

    server = _server(tmp_path)
    try:
        run = _start(server)
        plan = {"runId": run, "stepId": "plan", "output": "Plan: one."}
        state = _modern(server, plan)["requestState"]
        done = _modern(server, {"runId": run, "stepId": "plan"}, inputResponses=ACCEPT, requestState=state)
        assert done["structuredContent"]["accepted"] is True
        approved = next(e for e in _events(server, run) if e["type"] == "approved")
        assert approved["via"] == "input_required"
    finally:
        server.close()


def test_having_decided_one_step_gives_no_say_over_a_later_step_whose_rule_names_nobody(
    tmp_path: Path,
) -> None:
    write(
        tmp_path / "flows",
        {
            "id": "two-gates",
            "name": "Two gates",
            "description": "bob signs off the first; the second is the starter's.",
            "version": "1.0.0",
            "steps": [
                {
                    "id": "first",
                    "title": "First",
                    "prompt": "Do it.",
                    "requireConfirmation": True,
                    "approvers": ["bob"],
                },
                {"id": "second", "title": "Second", "prompt": "Do it.", "requireConfirmation": True},
            ],
        },
    )
    with HttpServer(*serve_args(tmp_path)) as http:
        run_id = waiting_run(http, "two-gates", "first")
        assert api(http, run_id, "approve", "bob").status_code == 200
        done = http.rpc(
            "workflow_continue",
            {"runId": run_id, "stepId": "second", "output": "Done."},
            headers=bearer("erin"),
        )
        assert done["result"]["status"] == "awaiting_approval"
        assert api(http, run_id, "approve", "bob").status_code == 404
        assert status(http, run_id) == "awaiting_approval"


def test_without_tokens_the_api_approves_only_where_the_operator_turned_it_on(tmp_path: Path) -> None:
    # a server without tokens cannot tell a person's request from the agent's shell
    args = [a for a in serve_args(tmp_path) if a not in ("--tokens", str(tmp_path / "tokens"))]
    plain = {"id": "plain", "name": "Plain", "description": "One step a person confirms.", "version": "1.0.0"}
    write(
        tmp_path / "flows",
        {
            **plain,
            "steps": [{"id": "ship", "title": "Ship", "prompt": "Ship it.", "requireConfirmation": True}],
        },
    )
    with HttpServer(*args) as http:
        started = http.rpc("workflow_start", {"workflowId": "plain", "goal": "Go"})
        assert "result" in started, started
        run_id = started["result"]["runId"]
        done = http.rpc("workflow_continue", {"runId": run_id, "stepId": "ship", "output": "Done."})
        assert done["result"]["status"] == "awaiting_approval", done
        refused = api(http, run_id, "approve", None)
        assert refused.status_code == 403, refused.text
        assert "--approval-channels" in refused.json()["error"]
    with HttpServer(*args, "--approval-channels", "dashboard,cli,api") as http:
        run_id = http.rpc("workflow_start", {"workflowId": "plain", "goal": "Again"})["result"]["runId"]
        http.rpc("workflow_continue", {"runId": run_id, "stepId": "ship", "output": "Done."})
        answered = api(http, run_id, "approve", None)
        assert answered.status_code == 200 and answered.json()["approved"]["person"] == "local"


FLOOD = 1_100  # past the 100 waiting runs the dashboard used to read and the 1,000 the sweep did


def _gate(workflow_id: str, approver: str, **timers: Any) -> dict[str, Any]:
    """A workflow whose first step waits for `approver`."""
    step = {"id": "gate", "title": "Gate", "prompt": "Wait.", "requireConfirmation": True}
    return {
        "id": workflow_id,
        "name": workflow_id.title(),
        "description": "One approval.",
        "version": "1.0.0",
        "steps": [
            {**step, "approvers": [approver], **timers},
            {"id": "after", "title": "After", "prompt": "Go."},
        ],
    }


def test_a_flood_of_other_waiting_runs_hides_no_run_from_its_approver_nor_from_the_reminder_sweep(
    tmp_path: Path,
) -> None:
    from handrail.catalog import load_catalog
    from handrail.model.request import Request
    from handrail.service.core import Service, later_runs

    args = serve_args(tmp_path)
    for document in (
        _gate("quiet", "alice"),
        _gate("nudged", "alice", remindAfter="1s"),
        _gate("others", "bob"),
    ):
        write(tmp_path / "flows", document)
    url = f"sqlite:///{tmp_path / 'r.db'}"
    service = Service(load_catalog(tmp_path / "flows", bundled=False), runs=later_runs(url))
    erin = Request(owner="erin")

    def waiting(workflow: str) -> str:
        run_id: str = service.call("workflow_start", {"workflowId": workflow, "goal": "Go"}, erin)["runId"]
        done = service.call("workflow_continue", {"runId": run_id, "stepId": "gate", "output": "Done."}, erin)
        assert done["status"] == "awaiting_approval", done
        return run_id

    try:
        quiet, nudged = waiting("quiet"), waiting("nudged")  # alice's, then the flood after them
        for _ in range(FLOOD):
            waiting("others")
    finally:
        service.close()
    with HttpServer(*args) as http:
        alice, _ = signed_in(http, "alice")
        try:
            home = alice.get("/").text
        finally:
            alice.close()
        listed = re.findall(
            r'data-run="(run_[0-9a-f]+)"', home.split('id="waiting"', 1)[-1].split("</section>")[0]
        )
        assert quiet in listed and nudged in listed, "alice's waiting runs are shown under the flood"
        deadline = time.monotonic() + 60  # the server sweeps every few seconds
        kinds: list[str] = []
        while time.monotonic() < deadline and "reminded" not in kinds:
            time.sleep(1)
            kinds = [e["type"] for e in events(http, nudged, tmp_path)]
        assert "reminded" in kinds, kinds


def test_a_quorum_whose_step_names_nobody_is_shown_to_every_person_who_may_give_it(
    tmp_path: Path,
) -> None:
    write(
        tmp_path / "flows",
        {
            "id": "pair",
            "name": "Pair",
            "description": "Two people sign off; the step names none.",
            "version": "1.0.0",
            "steps": [
                {
                    "id": "ship",
                    "title": "Ship",
                    "prompt": "Ship it.",
                    "requireConfirmation": True,
                    "approvals": 2,
                },
                {"id": "tell", "title": "Tell", "prompt": "Tell everyone."},
            ],
        },
    )
    with HttpServer(*serve_args(tmp_path)) as http:
        run_id = waiting_run(http, "pair", "ship")
        assert api(http, run_id, "approve", "erin").status_code == 200
        gina, _ = signed_in(http, "gina")
        try:
            assert run_id in gina.get("/").text
            assert gina.get(f"/runs/{run_id}").status_code == 200
        finally:
            gina.close()
        second = api(http, run_id, "approve", "gina")
        assert second.status_code == 200, second.text
        assert second.json()["status"] == "active"
