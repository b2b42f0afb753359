"""`serve --trust-proxy ADDR`: a real `handrail serve` takes the origin the browser used
from the forwarded headers of the proxy it names, and from no other peer; a value that
is no address is a usage error naming it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.helpers.http import HttpServer
from tests.helpers.server import clean_env

pytestmark = pytest.mark.slow

TOKEN = "ana-token-0123456789abcdef"
PUBLIC = "http://team.example:8765"
# what docs/team-compose.yml's nginx sends on: its own Host, the browser's in X-Forwarded-*
PROXIED = {"Host": "handrail.internal", "X-Forwarded-Host": "team.example:8765", "X-Forwarded-Proto": "http"}


def serve_args(tmp_path: Path, *extra: str) -> tuple[str, ...]:
    (tmp_path / "tokens").write_text(f"ana {TOKEN} scope=person\n", "utf-8")
    return (
        "--no-bundled",
        "--database",
        f"sqlite:///{tmp_path / 'r.db'}",
        "--tokens",
        str(tmp_path / "tokens"),
        "--allow-host",
        "handrail.internal",
        *extra,
    )


def sign_in(http: HttpServer, origin: str) -> httpx.Response:
    return http.client.post(
        f"{http.base}/signin",
        data={"token": TOKEN},
        headers={**PROXIED, "Origin": origin},
        follow_redirects=False,
    )


def test_a_sign_in_through_the_named_proxy_is_checked_against_the_origin_it_forwards(tmp_path: Path) -> None:
    with HttpServer(*serve_args(tmp_path, "--trust-proxy", "127.0.0.1")) as http:
        signed = sign_in(http, PUBLIC)
        assert signed.status_code == 303 and "failed" not in signed.headers["location"], signed.text
        assert sign_in(http, "http://evil.example:8765").status_code == 403
        assert sign_in(http, "http://team.example").status_code == 403  # the port counts
        assert sign_in(http, "https://team.example:8765").status_code == 403  # and the scheme


@pytest.mark.parametrize("trusting", [(), ("--trust-proxy", "10.0.0.5")])
def test_forwarded_headers_from_a_peer_not_named_are_ignored(
    tmp_path: Path, trusting: tuple[str, ...]
) -> None:
    with HttpServer(*serve_args(tmp_path, *trusting)) as http:
        refused = sign_in(http, PUBLIC)
        assert refused.status_code == 403, refused.text


def test_a_trust_proxy_that_is_no_address_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "serve", "--port", "0", "--trust-proxy", "nginx.internal"],
        capture_output=True,
        text=True,
        env=clean_env(tmp_path),
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "--trust-proxy: `nginx.internal` is not an IP address or network" in done.stderr


def test_a_passkey_behind_the_named_proxy_is_made_for_the_host_the_browser_used(tmp_path: Path) -> None:
    with (
        HttpServer(*serve_args(tmp_path, "--trust-proxy", "127.0.0.1")) as http,
        httpx.Client(base_url=http.base, headers=PROXIED, timeout=15, follow_redirects=True) as browser,
    ):
        signed = browser.post("/signin", data={"token": TOKEN}, headers={"Origin": PUBLIC})
        assert signed.status_code == 200 and signed.url.path == "/", signed.text
        found = re.search(r'name="csrf" value="([^"]+)"', browser.get("/passkeys").text)
        assert found is not None
        asked = browser.post("/passkeys/options", data={"csrf": found.group(1)}, headers={"Origin": PUBLIC})
        assert asked.status_code == 200, asked.text
        assert asked.json()["rp"]["id"] == "team.example"  # not the proxy's handrail.internal
