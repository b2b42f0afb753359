"""The dashboard's security over plain HTTP (no browser): a real `handrail serve` or
`handrail dashboard` process."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.helpers.http import HttpServer, free_port
from tests.helpers.server import clean_env
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

pytestmark = pytest.mark.slow

TOKEN = "another-s3cret"


def serve_args(tmp_path: Path) -> tuple[str, ...]:
    write(tmp_path / "flows", build_feature())  # beside any other workflow the test wrote
    return (
        "--no-bundled",
        "--workflows",
        str(tmp_path / "flows"),
        "--database",
        f"sqlite:///{tmp_path / 'r.db'}",
    )


def signed_in(http: HttpServer, token: str = TOKEN) -> tuple[httpx.Client, str]:
    """A client holding a session cookie, and the page's CSRF token."""
    client = httpx.Client(base_url=http.base, timeout=15)
    origin = {"Origin": http.base}
    reply = client.post("/signin", data={"token": token}, headers=origin, follow_redirects=False)
    assert reply.status_code == 303, reply.text
    page = client.get("/")
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found is not None, page.text
    return client, found.group(1)


def test_pages_forbid_inline_script_and_the_api_wants_a_session_or_the_bearer_token(tmp_path: Path) -> None:
    with HttpServer(*serve_args(tmp_path), env={"HANDRAIL_TOKEN": TOKEN}) as http:
        assert http.client.get(http.base + "/api/runs").status_code == 401
        wrong = http.client.get(http.base + "/api/runs", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        right = http.client.get(http.base + "/api/runs", headers={"Authorization": f"Bearer {TOKEN}"})
        assert right.status_code == 200 and right.json() == {"runs": []}
        signin = http.client.get(http.base + "/signin")
        policy = signin.headers["content-security-policy"]
        assert (
            "script-src 'self'" in policy
            and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
        )
        assert (
            http.client.get(http.base + "/", follow_redirects=False).headers["location"].startswith("/signin")
        )
        assert http.client.get(http.base + "/static/mermaid.min.js").status_code == 200
        assert http.client.get(http.base + "/static/../app.py").status_code == 404


def test_approve_is_refused_without_the_forms_token_or_from_another_site(tmp_path: Path) -> None:
    with HttpServer(*serve_args(tmp_path), env={"HANDRAIL_TOKEN": TOKEN}) as http:
        started = http.rpc(
            "workflow_start",
            {"workflowId": WORKFLOW_ID, "goal": "Guarded", "context": {"parts": []}},
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        run_id = started["result"]["runId"]
        client, csrf = signed_in(http)
        try:
            url = f"/runs/{run_id}/approve"
            no_token = client.post(url, data={"comment": "x"}, headers={"Origin": http.base})
            assert no_token.status_code == 403
            elsewhere = client.post(url, data={"csrf": csrf}, headers={"Origin": "https://evil.example"})
            assert elsewhere.status_code == 403
            as_json = client.post(url, json={"csrf": csrf}, headers={"Origin": http.base})
            assert as_json.status_code == 403  # only a form, and a small one, is read
            huge = client.post(
                url, data={"csrf": csrf, "comment": "x" * 100_000}, headers={"Origin": http.base}
            )
            assert huge.status_code == 403
            other_local_app = client.post(url, data={"csrf": csrf}, headers={"Origin": "http://127.0.0.1:1"})
            assert other_local_app.status_code == 403  # an allowed host, but not this server
            no_origin = client.post(url, data={"csrf": csrf})
            assert no_origin.status_code == 403
            other_verb = client.post(
                f"/runs/{run_id}/abandon", data={"csrf": csrf}, headers={"Origin": http.base}
            )
            assert other_verb.status_code == 404
            rebinding = client.get("/", headers={"Host": "evil.example"})
            assert rebinding.status_code == 403
            assert (
                http.rpc("workflow_resume", {"runId": run_id}, headers={"Authorization": f"Bearer {TOKEN}"})[
                    "result"
                ]["status"]
                == "active"
            )
        finally:
            client.close()


def test_handrail_dashboard_serves_the_page_on_loopback_without_a_token(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "handrail", "dashboard", "--port", str(port), *serve_args(tmp_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=clean_env(tmp_path) | {"HANDRAIL_TOKEN": TOKEN},  # one person's store: no token asked
    )
    try:
        deadline = time.monotonic() + 15
        page = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert page is not None and page.status_code == 200, proc.poll()
        assert "<h1>Runs</h1>" in page.text
        assert "httponly" in page.headers["set-cookie"].lower()
        assert "samesite=strict" in page.headers["set-cookie"].lower()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert f"the dashboard is at http://127.0.0.1:{port}/" in err.decode()


def test_each_person_signed_in_sees_only_their_own_runs_and_the_approver_is_named(tmp_path: Path) -> None:
    alice, bob = "alice-token-0123456789abcdef", "bob-token-fedcba9876543210xyz"
    write(tmp_path / "flows", confirmed())
    (tmp_path / "tokens").write_text(f"alice {alice}\nbob {bob}\n", "utf-8")
    args = (*serve_args(tmp_path), "--tokens", str(tmp_path / "tokens"))
    with HttpServer(*args) as http:
        started = http.rpc(
            "workflow_start",
            {"workflowId": "confirmed", "goal": "Alice's release"},
            headers={"Authorization": f"Bearer {alice}"},
        )
        run_id = started["result"]["runId"]
        waiting = http.rpc(
            "workflow_continue",
            {"runId": run_id, "stepId": "ship", "output": "Ready."},
            headers={"Authorization": f"Bearer {alice}"},
        )
        assert waiting["result"]["status"] == "awaiting_approval"
        as_bob, bob_csrf = signed_in(http, bob)
        as_alice, alice_csrf = signed_in(http, alice)
        try:
            assert as_bob.get("/api/runs").json() == {"runs": []}
            assert as_bob.get(f"/runs/{run_id}").status_code == 404
            refused = as_bob.post(
                f"/runs/{run_id}/decline", data={"csrf": bob_csrf}, headers={"Origin": http.base}
            )
            assert "Run not found" in as_bob.get(refused.headers["location"]).text
            (row,) = as_alice.get("/api/runs").json()["runs"]
            assert row["runId"] == run_id and row["owner"] == "alice"
            declined = as_alice.post(
                f"/runs/{run_id}/decline",
                data={"csrf": alice_csrf, "comment": "Not on a Friday"},
                headers={"Origin": http.base},
            )
            page = as_alice.get(declined.headers["location"]).text
            assert "Declined." in page and "Not on a Friday" in page
            assert as_alice.get(f"/api/runs/{run_id}").json()["status"] == "active"
        finally:
            as_bob.close()
            as_alice.close()


def confirmed() -> dict[str, object]:
    return {
        "id": "confirmed",
        "name": "Confirmed",
        "description": "One step a person confirms.",
        "version": "1.0.0",
        "steps": [
            {"id": "ship", "title": "Ship", "prompt": "Ship it.", "requireConfirmation": True},
            {"id": "tell", "title": "Tell", "prompt": "Tell everyone."},
        ],
    }
