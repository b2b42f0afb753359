"""The out-of-band approval link (issue 34): while the gate watches a run, `handrail runs
approve` is refused on the command line the agent shares, and sends the person a
one-time link through the receivers the run's own notifications go to. A real
`handrail serve` with a real local webhook receiver; the agent's command runs as a
process of its own, with a receiver of its own in its environment."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from handrail.model.request import LOCAL
from handrail.notify.signing import signature
from handrail.runs.links import LinkRefused
from tests.dashboard.test_passkeys_browser import handrail, status, waiting_watched_run
from tests.gate.runs import GateWorld
from tests.helpers.http import HttpServer
from tests.helpers.receiver import Received, Receiver

SECRET = "whsec_" + "c2VjcmV0LWtleS1vZi10aGUtcGVyc29u"  # base64 of a key of the person's receiver


@pytest.fixture
def receivers() -> Iterator[tuple[Receiver, Receiver]]:
    """The person's receiver, and one the agent runs."""
    with Receiver() as person, Receiver() as agent:
        yield person, agent


def of_type(receiver: Receiver, kind: str) -> list[Received]:
    return [r for r in receiver.received if r.json.get("type") == kind]


def stored_bytes(world: GateWorld) -> bytes:
    """Everything the store's files hold (the database and its journal)."""
    return b"".join(p.read_bytes() for p in world.handrail_home.iterdir() if p.name.startswith("handrail.db"))


@pytest.mark.slow
def test_the_command_line_sends_a_one_time_link_the_agent_never_sees_and_the_person_decides_by_it(
    world: GateWorld, receivers: tuple[Receiver, Receiver]
) -> None:
    person, agent = receivers
    args = ("--no-bundled", "--workflows", str(world.workflows), "--database", world.url)
    notify = ("--notify", person.url + "/hook", "--notify-secret", SECRET)
    with HttpServer(*args, *notify, env={"HANDRAIL_HOME": str(world.handrail_home)}) as server:
        run = waiting_watched_run(world, server)
        deadline = time.monotonic() + 30  # the server's worker delivers the run's notifications
        while not of_type(person, "run.awaiting_approval") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert of_type(person, "run.awaiting_approval")

        # the agent's command, in the person's environment (the receivers' secret) with a
        # receiver and a dashboard address of the agent's own added
        env = {
            **world.env(),
            "HANDRAIL_NOTIFY_SECRET": SECRET,
            "HANDRAIL_NOTIFY": agent.url,
            "HANDRAIL_PUBLIC_URL": agent.url,
        }
        refused = subprocess.run(
            [sys.executable, "-m", "handrail", "runs", "approve", run, "--database", world.url],
            capture_output=True,
            text=True,
            env=env,
            cwd=world.workspace,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        printed = refused.stdout + refused.stderr
        assert refused.returncode == 1, printed
        assert "one-time signed link to approve it as" in refused.stderr
        assert "http://127.0.0.1:" in refused.stderr and "/link/" not in printed
        assert status(world, run) == "awaiting_approval"

        # it went to the run's receiver, signed, and nowhere the agent named
        sent = of_type(person, "run.approval_link")
        assert len(sent) == 1 and agent.received == []
        headers = sent[0].headers
        expected = signature(SECRET, headers["webhook-id"], int(headers["webhook-timestamp"]), sent[0].body)
        assert headers["webhook-signature"] == expected
        link = sent[0].json["link"]
        found = re.fullmatch(rf"{re.escape(server.base)}/runs/{run}/link/([\w-]+)", link)
        assert found is not None, link
        token = found.group(1)
        assert len(token) >= 40 and token not in printed
        assert token.encode() not in stored_bytes(world)  # the store keeps its hash only

        with httpx.Client(base_url=server.base, timeout=15) as browser:
            # a guess, or what the command printed, opens nothing
            assert browser.get(f"/runs/{run}/link/{'x' * 43}", follow_redirects=True).status_code == 403
            opened = browser.get(link, follow_redirects=True)
            assert opened.status_code == 200, opened.text
            assert status(world, run) == "awaiting_approval"  # opening it decides nothing
            csrf = re.search(r'name="csrf" value="([^"]+)"', opened.text)
            assert csrf is not None
            decided = browser.post(
                link, data={"csrf": csrf.group(1)}, headers={"Origin": server.base}, follow_redirects=False
            )
            assert decided.status_code == 303 and decided.headers["location"] == f"/runs/{run}?note=approved"
            again = browser.get(link, follow_redirects=True)
            assert again.status_code == 403 and "it was used already" in again.text
            replayed = browser.post(link, data={"csrf": csrf.group(1)}, headers={"Origin": server.base})
            assert replayed.status_code == 403

    approved = next(e for e in world.events() if e["type"] == "approved")
    assert (
        approved["via"] == "link" and approved["person"] == refused.stderr.split(" as ")[1].split(" was")[0]
    )
    verified = handrail(world, "runs", "verify", run, "--database", world.url)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def waiting(world: GateWorld) -> str:
    """A run of the gate fixture whose `release` step waits for a person."""
    run = world.start(at="release")
    world.complete("release")
    return run


def test_a_link_decides_once_as_its_person_and_a_decision_made_elsewhere_ends_it(world: GateWorld) -> None:
    runs = world.runs
    first = waiting(world)
    row = runs.store.get(first)
    assert row is not None and row.status == "awaiting_approval"
    token, link = runs.links.issue(row, "ana", True, "ship it", ["http://127.0.0.1"])
    with pytest.raises(LinkRefused, match="no approval link of this run has this token"):
        runs.by_link(first, token[:-1] + ("A" if token[-1] != "A" else "B"))
    with pytest.raises(LinkRefused, match="it was sent for ana, not for bob"):
        runs.by_link(first, token, person="bob")
    decided, _ = runs.by_link(first, token)
    assert decided == link
    approved = next(e for e in world.events() if e["type"] == "approved")
    assert approved["person"] == "ana" and approved["comment"] == "ship it" and approved["via"] == "link"
    with pytest.raises(LinkRefused, match="it was used already"):
        runs.by_link(first, token)

    second = waiting(world)
    row = runs.store.get(second)
    assert row is not None
    token, _ = runs.links.issue(row, "ana", False, None, ["http://127.0.0.1"])
    runs.decide(LOCAL, second, "approve", person="ana")  # decided on another channel first
    with pytest.raises(LinkRefused, match=r"the run moved on since it was sent \(approved\)"):
        runs.by_link(second, token)
    assert token not in json.dumps([e.as_dict() for e in runs.store.events(second)])
