"""docs/team-compose.yml for real: two `handrail serve` replicas on one real PostgreSQL
behind Debian's nginx, with the nginx configuration read from that file (so the
document is what is tested) and round robin between the replicas. Through it a person
signs in, watches, approves and declines, and an agent makes its MCP calls, with the
requests alternating between the replicas."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.http import HttpServer, free_port
from tests.helpers.nginx import Nginx, require_nginx
from tests.runs.workflows import write

pytestmark = pytest.mark.slow

COMPOSE = Path(__file__).resolve().parents[2] / "docs" / "team-compose.yml"
PUBLIC_HOST = "team.example"  # the name browsers use for the balancer: no replica allows it
TOKENS = {
    "lena": ("lena-token-0123456789abcdef", "roles=lead scope=person"),
    "robot": ("robot-token-0123456789abcdef", "scope=agent"),
}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def nginx_config() -> str:
    """The `content` of the compose file's `configs.nginx`, as nginx reads it."""
    text = COMPOSE.read_text("utf-8")
    found = re.search(r"^configs:\n  nginx:\n    content: \|\n((?:      .*\n|\n)+)", text, re.M)
    assert found is not None, "docs/team-compose.yml has no configs.nginx.content block"
    return textwrap.dedent(found.group(1))


def replica_flags() -> dict[str, str]:
    """The flags of the compose file's `handrail serve` that a proxy depends on."""
    text = COMPOSE.read_text("utf-8")
    command = re.search(r"^  command: >\n((?:    .*\n)+)", text, re.M)
    assert command is not None, "docs/team-compose.yml's replicas have no command"
    flags = dict(re.findall(r"(--allow-host|--trust-proxy) (\S+)", command.group(1)))
    assert set(flags) == {"--allow-host", "--trust-proxy"}, flags
    balancer = re.search(r"team: \{ipv4_address: (\S+)\}", text)
    assert balancer is not None and balancer.group(1) == flags["--trust-proxy"]  # it names the balancer
    return flags


def localised(config: str, replicas: list[int], port: int) -> str:
    """The compose file's names and ports replaced by this machine's: each once, so a
    change to the document that this test does not follow fails here."""
    swaps = [
        ("server handrail-a:8765", f"server 127.0.0.1:{replicas[0]}"),
        ("server handrail-b:8765", f"server 127.0.0.1:{replicas[1]}"),
        ("listen 8765;", f"listen 127.0.0.1:{port};"),
    ]
    for old, new in swaps:
        assert config.count(old) == 1, f"docs/team-compose.yml's nginx config lacks `{old}`"
        config = config.replace(old, new)
    # which replica answered, for the test to see the round robin (outside the document's
    # server block, whose location adds no header of its own and so inherits this one)
    return "add_header X-Replica $upstream_addr always;\n" + config


@pytest.fixture
def balanced(tmp_path: Path, postgres_url: str) -> Iterator[tuple[str, list[HttpServer], Nginx]]:
    require_nginx()
    write(tmp_path / "flows", release())
    lines = [f"{name} {token} {rest}" for name, (token, rest) in TOKENS.items()]
    (tmp_path / "tokens").write_text("\n".join(lines) + "\n", "utf-8")
    flags = replica_flags()
    args = (
        "--no-bundled",
        "--workflows",
        str(tmp_path / "flows"),
        "--database",
        postgres_url,
        "--tokens",
        str(tmp_path / "tokens"),
        "--allow-host",
        flags["--allow-host"],
        "--trust-proxy",
        "127.0.0.1",  # where this machine's nginx connects from, as the balancer's address there
    )
    with ExitStack() as stack:
        replicas = [stack.enter_context(HttpServer(*args)) for _ in range(2)]
        port = free_port()
        config = localised(nginx_config(), [r.port for r in replicas], port)
        proxy = stack.enter_context(Nginx(tmp_path / "nginx", config, port))
        yield f"http://127.0.0.1:{port}", replicas, proxy


def release() -> dict[str, Any]:
    return {
        "id": "release",
        "name": "Release",
        "description": "A lead signs off each release.",
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


class Seen:
    """Every answer through the balancer, with the replica nginx sent it to."""

    def __init__(self) -> None:
        self.replicas: list[str] = []

    def __call__(self, response: httpx.Response) -> None:
        self.replicas.append(response.headers.get("x-replica", "?"))


def agent_call(client: httpx.Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {TOKENS['robot'][0]}"}
    reply = client.post("/mcp", json=body, headers=headers)
    assert reply.status_code == 200, reply.text
    result: dict[str, Any] = reply.json()["result"]
    assert not result.get("isError"), result
    structured: dict[str, Any] = result["structuredContent"]
    return structured


def waiting_run(agent: httpx.Client, goal: str) -> str:
    started = agent_call(agent, "workflow_start", {"workflowId": "release", "goal": goal})
    run_id: str = started["runId"]
    done = agent_call(agent, "workflow_continue", {"runId": run_id, "stepId": "ship", "output": "Shipped."})
    assert done["status"] == "awaiting_approval", done
    return run_id


def test_through_the_documented_nginx_a_person_and_an_agent_work_across_both_replicas(
    balanced: tuple[str, list[HttpServer], Nginx],
) -> None:
    base, _, proxy = balanced
    origin = f"http://{PUBLIC_HOST}:{base.rsplit(':', 1)[1]}"
    seen = Seen()
    hooks = {"response": [seen]}
    with (
        httpx.Client(base_url=base, timeout=30, event_hooks=hooks) as agent,
        httpx.Client(
            base_url=base, timeout=30, event_hooks=hooks, headers={"Host": origin.split("//")[1]}
        ) as browser,
    ):
        approved, declined = waiting_run(agent, "Release 1"), waiting_run(agent, "Release 2")
        assert len(set(seen.replicas)) == 2, seen.replicas  # the agent's calls reached both

        signed = browser.post(
            "/signin", data={"token": TOKENS["lena"][0]}, headers={"Origin": origin}, follow_redirects=False
        )
        assert signed.status_code == 303 and "failed" not in signed.headers["location"], (
            signed.text,
            proxy.errors,
        )
        seen.replicas.clear()
        pages = [browser.get("/", follow_redirects=False) for _ in range(4)]  # polls and page loads
        assert [p.status_code for p in pages] == [200] * 4, [p.headers.get("location") for p in pages]
        assert all(approved in p.text and declined in p.text for p in pages)  # both wait for lena
        assert len(set(seen.replicas)) == 2, seen.replicas  # each replica knew her session
        found = re.search(r'name="csrf" value="([^"]+)"', pages[-1].text)
        assert found is not None
        csrf = found.group(1)

        def decide(run_id: str, verb: str, **extra: str) -> str:
            posted = browser.post(
                f"/runs/{run_id}/{verb}",
                data={"csrf": csrf, **extra},
                headers={"Origin": origin},
                follow_redirects=False,
            )
            assert posted.status_code == 303, posted.text
            return browser.get(posted.headers["location"]).text

        assert "Approved." in decide(approved, "approve")
        decide(declined, "decline", comment="Not on a Friday")
        assert len(set(seen.replicas)) == 2, seen.replicas  # sign-in, pages and decisions: both

        # the agent goes on, each call to whichever replica nginx picks
        seen.replicas.clear()
        told = agent_call(
            agent, "workflow_continue", {"runId": approved, "stepId": "tell", "output": "Told."}
        )
        assert told["status"] == "completed", told
        again = agent_call(
            agent, "workflow_continue", {"runId": declined, "stepId": "ship", "output": "Fixed."}
        )
        assert again["status"] == "awaiting_approval", again
        assert len(set(seen.replicas)) == 2, seen.replicas
