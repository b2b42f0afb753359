"""OAuth 2.1 for /mcp, as the MCP authorization spec has it, against a real OpenID
provider (tests/helpers/identity_provider.py): a JWT from its client credentials grant
for this server's /mcp reaches it; an expired one, or one for another audience, is
refused with a 401 whose WWW-Authenticate names the protected resource metadata, and
so is one whose claims were changed under its signature, or that carries none."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest

from tests.helpers.identity_provider import AGENT_SECRET, team

pytestmark = pytest.mark.slow


def _part(value: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def forged(token: str, issuer: str) -> list[str]:
    """What an agent could make of a token it saw: its claims changed under the
    provider's signature (another subject, another issuer), and the same claims
    unsigned (`alg: none`)."""
    head, body, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    other_subject = f"{head}.{_part({**claims, 'sub': 'someone-else'})}.{signature}"
    other_issuer = f"{head}.{_part({**claims, 'iss': issuer + '/evil'})}.{signature}"
    unsigned = f"{_part({'alg': 'none', 'typ': 'JWT'})}.{body}."
    return [other_subject, other_issuer, unsigned]


def metadata_of(challenge: str) -> str:
    assert challenge.startswith("Bearer "), challenge
    return challenge.split('resource_metadata="', 1)[1].split('"', 1)[0]


def test_a_providers_jwt_reaches_mcp_and_an_expired_or_foreign_one_is_refused_as_the_spec_says(
    tmp_path: Path,
) -> None:
    with team(tmp_path) as (provider, http):
        token = provider.client_token("agent-bot", AGENT_SECRET, http.url)
        started = http.rpc(
            "workflow_start",
            {"workflowId": "signoff", "goal": "Go"},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert started["result"]["runId"], started

        anonymous = http.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert anonymous.status_code == 401
        where = metadata_of(anonymous.headers["www-authenticate"])
        assert where == f"{http.base}/.well-known/oauth-protected-resource/mcp"
        document = http.client.get(where).json()
        assert document["resource"] == http.url
        assert document["authorization_servers"] == [provider.issuer]

        foreign = provider.client_token("agent-bot", AGENT_SECRET, "http://127.0.0.1:9/another/mcp")
        short = provider.client_token("short-lived", AGENT_SECRET, http.url)
        time.sleep(2.1)  # the provider gave `short-lived` one second
        for refused in (foreign, short, *forged(token, provider.issuer)):
            answer = http.post(
                {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"Authorization": f"Bearer {refused}"}
            )
            assert answer.status_code == 401, answer.text
            challenge = answer.headers["www-authenticate"]
            assert 'error="invalid_token"' in challenge
            assert metadata_of(challenge) == where


def test_a_providers_jwt_scoped_person_does_not_reach_mcp(tmp_path: Path) -> None:
    with team(tmp_path) as (provider, http):
        token = provider.client_token("agent-bot", AGENT_SECRET, http.url, scope="person")
        answer = http.post(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"Authorization": f"Bearer {token}"}
        )
        assert answer.status_code == 403, answer.text
        assert "scope is `person`" in answer.json()["error"]["message"]
