"""OAuth 2.1 for /mcp, as the MCP authorization spec has it, against a real OpenID
provider (tests/helpers/identity_provider.py): a JWT from its client credentials grant
for this server's /mcp reaches it; an expired one, or one for another audience, is
refused with a 401 whose WWW-Authenticate names the protected resource metadata."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.helpers.identity_provider import AGENT_SECRET, team

pytestmark = pytest.mark.slow


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
        for refused in (foreign, short):
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
