"""A real OpenID provider for a test: the certified `oidc-provider` from npm (installed
in tests/harnesses by `.ci/run`), run by tests/harnesses/oidc_provider.mjs on
127.0.0.1. Nothing is mocked: handrail fetches its discovery document and keys, the
browser signs in on its own pages, and its token endpoint issues the JWTs.

`IdentityProvider(port, clients, accounts)` starts it and waits for `ready`; it dies
when the test's `with` ends (stdin closed, then terminated). Outside CI a missing node
or package skips the test with the reason; under CI=true it fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import pytest

from tests.helpers.http import HttpServer, free_port
from tests.helpers.server import clean_env

HARNESSES = Path(__file__).resolve().parents[1] / "harnesses"
SCRIPT = HARNESSES / "oidc_provider.mjs"
READY_SECONDS = 20.0


def require_provider() -> str:
    node = shutil.which("node")
    installed = (HARNESSES / "node_modules" / "oidc-provider" / "package.json").exists()
    if node is not None and installed:
        return node
    reason = (
        "no node on PATH" if node is None else "oidc-provider is not installed (npm ci in tests/harnesses)"
    )
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


class IdentityProvider:
    def __init__(self, port: int, clients: list[dict[str, Any]], accounts: dict[str, dict[str, Any]]) -> None:
        node = require_provider()
        self.port = port
        self.issuer = f"http://127.0.0.1:{port}"
        self.home = Path(tempfile.mkdtemp(prefix="handrail-oidc-"))
        self._log = (self.home / "stderr.log").open("wb")
        settings = json.dumps({"port": port, "clients": clients, "accounts": accounts})
        self.proc = subprocess.Popen(
            [node, str(SCRIPT), settings],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            cwd=HARNESSES,
            env=clean_env(self.home),
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # `ready`, or nothing when it died
        if line.strip() != b"ready":
            self.close()
            raise AssertionError(f"the OpenID provider did not start:\n{self.stderr}")

    @property
    def stderr(self) -> str:
        self._log.flush()
        return (self.home / "stderr.log").read_text("utf-8", "replace")

    def client_token(self, client_id: str, secret: str, resource: str, scope: str = "agent") -> str:
        """An access token (a JWT for `resource`) from the client credentials grant."""
        answer = httpx.post(
            f"{self.issuer}/token",
            data={"grant_type": "client_credentials", "scope": scope, "resource": resource},
            auth=(client_id, secret),
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        token: str = answer.json()["access_token"]
        assert token.count(".") == 2, "a resource indicator makes the provider issue a JWT"
        return token

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._log.close()
        shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self) -> IdentityProvider:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


HANDRAIL_SECRET = "handrail-client-secret-0123456789"
AGENT_SECRET = "agent-client-secret-0123456789"
ACCOUNTS = {
    "lena": {"name": "Lena Lead", "email": "lena@example.test", "groups": ["handrail-leads", "staff"]},
    "pat": {"name": "Pat Plain", "email": "pat@example.test", "groups": ["staff"]},
}
ROBOT_TOKEN = "robot-token-0123456789abcdef"  # the tokens file's agent, beside the provider


def signoff() -> dict[str, Any]:
    """A step only a lead may approve."""
    return {
        "id": "signoff",
        "name": "Sign-off",
        "description": "A change a lead signs off.",
        "version": "1.0.0",
        "steps": [
            {
                "id": "ship",
                "title": "Ship",
                "prompt": "Ship it.",
                "requireConfirmation": True,
                "approvers": ["role:lead"],
            },
            {"id": "tell", "title": "Tell", "prompt": "Tell everyone."},
        ],
    }


@contextmanager
def team(tmp_path: Path) -> Iterator[tuple[IdentityProvider, HttpServer]]:
    """`handrail serve` trusting a real provider (leads are its `handrail-leads`), with a
    tokens file that keeps an agent token; the provider knows the server's callback."""
    require_provider()
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "signoff.json").write_text(json.dumps(signoff()), "utf-8")
    (tmp_path / "tokens").write_text(f"robot {ROBOT_TOKEN} scope=agent\n", "utf-8")
    port = free_port()
    args = (
        "--no-bundled",
        "--workflows",
        str(tmp_path / "flows"),
        "--database",
        f"sqlite:///{tmp_path / 'r.db'}",
        "--tokens",
        str(tmp_path / "tokens"),
        "--oidc-issuer",
        f"http://127.0.0.1:{port}",
        "--oidc-client-id",
        "handrail",
        "--oidc-roles",
        "lead=handrail-leads",
    )
    with HttpServer(*args, env={"HANDRAIL_OIDC_CLIENT_SECRET": HANDRAIL_SECRET}) as http:
        machine = {"grant_types": ["client_credentials"], "response_types": [], "redirect_uris": []}
        clients = [
            {
                "client_id": "handrail",
                "client_secret": HANDRAIL_SECRET,
                "redirect_uris": [f"{http.base}/signin/oidc/callback"],
                "grant_types": ["authorization_code"],
                "response_types": ["code"],
            },
            {"client_id": "agent-bot", "client_secret": AGENT_SECRET, **machine},
            {"client_id": "short-lived", "client_secret": AGENT_SECRET, **machine},
        ]
        with IdentityProvider(port, clients, ACCOUNTS) as provider:
            yield provider, http
