"""Dashboard sessions on replicas: two `handrail serve` processes on one real PostgreSQL
serve each other's signed-in people, and a sign-out on one ends the session on both."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from tests.helpers.http import HttpServer

pytestmark = pytest.mark.slow

TOKEN = "ana-token-0123456789abcdef"


@pytest.fixture
def replicas(tmp_path: Path, postgres_url: str) -> Iterator[list[HttpServer]]:
    (tmp_path / "tokens").write_text(f"ana {TOKEN} scope=person\n", "utf-8")
    common = ("--no-bundled", "--database", postgres_url, "--tokens", str(tmp_path / "tokens"))
    with ExitStack() as stack:
        yield [stack.enter_context(HttpServer(*common)) for _ in range(2)]


def home(server: HttpServer, cookie: str) -> httpx.Response:
    with httpx.Client(cookies={"handrail_session": cookie}, timeout=15) as browser:
        return browser.get(f"{server.base}/", follow_redirects=False)


def test_a_session_made_on_one_replica_is_served_and_ended_by_the_other(replicas: list[HttpServer]) -> None:
    first, second = replicas
    signed = first.client.post(
        f"{first.base}/signin",
        data={"token": TOKEN},
        headers={"Origin": first.base},
        follow_redirects=False,
    )
    assert signed.status_code == 303 and "failed" not in signed.headers["location"], signed.headers
    cookie = signed.cookies["handrail_session"]
    first.client.cookies.clear()
    page = home(second, cookie)
    assert page.status_code == 200, page.headers
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf is not None
    with httpx.Client(cookies={"handrail_session": cookie}, timeout=15) as browser:
        out = browser.post(
            f"{second.base}/signout",
            data={"csrf": csrf.group(1)},
            headers={"Origin": second.base},
            follow_redirects=False,
        )
    assert out.status_code == 303 and out.headers["location"] == "/signin"
    for server in replicas:
        after = home(server, cookie)
        assert after.status_code == 303 and after.headers["location"].startswith("/signin"), server.base
