"""Single sign-on in a real headless Chromium against a real OpenID provider
(tests/helpers/identity_provider.py): a person signs in on the provider's own pages
(the code flow with PKCE), the provider's groups claim makes her a lead, and she
approves a step only a lead may; a person outside that group signs in the same way
and may not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.http import HttpServer
from tests.helpers.identity_provider import ROBOT_TOKEN, team

pytestmark = pytest.mark.slow


def sign_in_through_the_provider(page: Any, http: HttpServer, login: str, then: str) -> None:
    page.context.clear_cookies()  # the provider's too: each person logs in afresh
    page.goto(f"{http.base}/signin?next={then}")
    page.click("#single-sign-on")
    page.fill("input[name=login]", login)  # the provider's login page
    page.fill("input[name=password]", "any password")
    page.click("button[type=submit]")
    page.click("button[type=submit]")  # its consent page: "Continue"
    page.wait_for_url(f"{http.base}{then}")


def test_the_providers_groups_make_a_lead_who_approves_and_leave_a_plain_member_unable_to(
    tmp_path: Path, page: Any
) -> None:
    with team(tmp_path) as (provider, http):
        forged = http.client.get(
            f"{http.base}/signin/oidc/callback?state=s&code=c", headers={"Cookie": "handrail_oidc=x.y"}
        )
        assert (forged.status_code, forged.headers["location"]) == (303, "/signin?failed")
        robot = {"Authorization": f"Bearer {ROBOT_TOKEN}"}
        run_id = http.rpc("workflow_start", {"workflowId": "signoff", "goal": "Go"}, headers=robot)["result"][
            "runId"
        ]
        done = http.rpc(
            "workflow_continue", {"runId": run_id, "stepId": "ship", "output": "Done."}, headers=robot
        )
        assert done["result"]["status"] == "awaiting_approval", done

        sign_in_through_the_provider(page, http, "pat", f"/runs/{run_id}")
        assert page.locator(".who").inner_text() == f"pat@127.0.0.1:{provider.port}"
        assert page.locator("#approve").count() == 0 and page.locator("#decline").count() == 0
        said = page.locator("main").inner_text()
        assert f"pat@127.0.0.1:{provider.port} is not among this step's approvers: role:lead" in said

        sign_in_through_the_provider(page, http, "lena", f"/runs/{run_id}")
        assert page.locator(".who").inner_text() == f"lena@127.0.0.1:{provider.port}"
        assert "handrail_oidc_roles" in {
            cookie["name"] for cookie in page.context.cookies()
        }  # for any replica
        page.fill("#comment", "Signed off")
        page.click("#approve")
        assert page.locator(".note").inner_text() == "Approved."
        after = http.rpc("workflow_resume", {"runId": run_id}, headers=robot)
        assert after["result"]["status"] == "active", after
