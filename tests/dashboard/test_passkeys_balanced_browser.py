"""Passkeys behind the documented load balancer: in a real Chromium with a virtual
authenticator, through Debian's nginx in round robin over two `handrail serve` replicas
on one PostgreSQL, a person registers a passkey and approves with it. The challenge a
ceremony signs is asked of one replica and answered to the other: the challenges live
in the store they share, as the sessions do, and each is taken once."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.dashboard.test_passkeys_browser import AUTHENTICATOR
from tests.helpers.http import HttpServer
from tests.helpers.nginx import Nginx
from tests.transport.test_team_proxy import TOKENS, balanced, waiting_run  # noqa: F401  # the fixture

pytestmark = pytest.mark.slow


class Served:
    """Which replica nginx sent each of the page's requests to, by method and path."""

    def __init__(self, page: Any) -> None:
        self.seen: list[tuple[str, str, str]] = []
        page.on("response", self.note)

    def note(self, response: Any) -> None:
        request = response.request
        replica = response.headers.get("x-replica", "?")
        self.seen.append((request.method, urlsplit(request.url).path, replica))

    def replica(self, method: str, path: str) -> str:
        """The replica that answered the last such request."""
        found = [replica for m, p, replica in self.seen if (m, p) == (method, path)]
        assert found, f"no {method} {path} among {self.seen}"
        return found[-1]


def test_a_passkey_asked_of_one_replica_is_answered_by_the_other_through_the_balancer(
    balanced: tuple[str, list[HttpServer], Nginx],  # noqa: F811
    page: Any,
) -> None:
    base, _, proxy = balanced
    local = f"http://localhost:{base.rsplit(':', 1)[1]}"  # a host name: WebAuthn takes no address
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    cdp.send("WebAuthn.addVirtualAuthenticator", {"options": AUTHENTICATOR})
    served = Served(page)
    page.goto(f"{local}/signin")
    page.fill("#token", TOKENS["lena"][0])
    page.press("#token", "Enter")
    page.wait_for_url(f"{local}/")

    # registered: the options from one replica, the new credential to the other
    page.goto(f"{local}/passkeys")
    page.fill("#passkey-name", "laptop")
    page.click("#add-passkey")
    assert page.locator("#note").inner_text() == "Passkey registered.", proxy.errors
    asked, answered = (
        served.replica("POST", "/passkeys/options"),
        served.replica("POST", "/passkeys/register"),
    )
    assert asked != answered, served.seen  # round robin: consecutive requests, other replicas
    assert "laptop" in page.locator("#passkey-list").inner_text()

    # approved with it: the challenge over the chain head from one, the signed answer to the other
    with httpx.Client(base_url=base, timeout=30) as agent:
        run = waiting_run(agent, "Release 1")
    page.goto(f"{local}/runs/{run}")
    page.fill("#comment", "Ship it")
    page.click("#approve")
    page.locator("#sign").wait_for()
    assert "lena registered a passkey" in page.locator("#presence").inner_text()
    page.click("#sign")
    assert page.locator(".note").inner_text() == "Approved.", proxy.errors
    challenged = served.replica("POST", f"/runs/{run}/approve/challenge")
    decided = served.replica("POST", f"/runs/{run}/approve")
    assert challenged != decided, served.seen
    assert page.errors == []
