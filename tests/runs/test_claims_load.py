"""Claims under load, through real HTTP clients on two `handrail serve` replicas of one
real PostgreSQL: 8 agents claim and complete 100 branches of one parallel loop while
one replica is killed with SIGKILL mid-way (its agents move to the other); every branch
is done exactly once and no acknowledged step is lost. Two agents racing for one branch
on the two replicas: exactly one holds it. Agents that send no session header, behind a
round-robin balancer (every call on the other replica), keep their branches by the
lease token."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from handrail.store import open_store
from tests.helpers.http import HttpServer
from tests.runs.workflows import REVIEW_ID, review_files, write

pytestmark = pytest.mark.slow

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
AGENTS = 8
BRANCHES = 100
KILL_AFTER = 30  # branches completed before the first replica is killed
LEASE = "2"  # seconds: a branch held by a connection that died is free again soon
MAX_PARALLEL = 16  # branches open at once; the next open as these complete
OUTPUTS = {"review": "Reviewed it.", "note": "Nothing to note."}
STEPS = ["review", "note"]


@pytest.fixture
def replicas(tmp_path: Path, postgres_url: str) -> Iterator[list[HttpServer]]:
    write(tmp_path / "flows", review_files(max_parallel=MAX_PARALLEL))
    common = ("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", postgres_url)
    with ExitStack() as stack:
        yield [stack.enter_context(HttpServer(*common, "--lease-seconds", LEASE)) for _ in range(2)]


def post(server: HttpServer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    with httpx.Client(timeout=30) as client:
        answer: dict[str, Any] = client.post(server.url, json=body, headers=HEADERS).json()
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def fan_out(server: HttpServer, folder: Path, count: int) -> dict[str, Any]:
    """A run of the parallel loop over `count` files, waiting on its branches."""
    files = [f"f{i}.py" for i in range(count)]
    started = post(server, "workflow_start", {"workflowId": REVIEW_ID, "goal": "Review each file",
                   "workspace": str(folder), "context": {"files": files}})  # fmt: skip
    waiting = post(server, "workflow_continue",
                   {"runId": started["runId"], "stepId": "collect", "output": "The files."})  # fmt: skip
    assert waiting["waitingOn"]["kind"] == "branches", waiting
    return waiting


class Agent:
    """One agent: an HTTP client on a replica, moving to the other when its replica dies.
    Even agents name themselves with Mcp-Session-Id (they keep their branch across
    replicas); odd ones are their connection (a new one after the move: their branch
    waits for its lease to end, then someone claims it)."""

    def __init__(self, n: int, replicas: list[HttpServer], dead: threading.Event) -> None:
        self.n = n
        self.order = [replicas[n % 2], replicas[1 - n % 2]]
        self.dead = dead  # set once the first replica is killed
        self.headers = HEADERS | ({"Mcp-Session-Id": f"agent-{n}"} if n % 2 == 0 else {})
        self.client = httpx.Client(timeout=30)
        self.acknowledged: list[tuple[str, str]] = []  # (branch, step) answered as accepted
        self.completed: list[str] = []

    def server(self) -> HttpServer:
        return self.order[1] if self.dead.is_set() and self.order[0] is self.victim else self.order[0]

    victim: HttpServer | None = None

    def call(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": name, "params": params}
        for _ in range(3):
            try:
                answer: dict[str, Any] = self.client.post(
                    self.server().url, json=body, headers=self.headers
                ).json()
                return answer
            except httpx.TransportError:
                self.client.close()  # its replica died: a new client, on the other one
                self.client = httpx.Client(timeout=30)
                self.order.reverse()
        raise AssertionError(f"agent {self.n}: no replica answers")

    def work(self, parent: str) -> None:
        while True:
            got = self.call("workflow_claim", {"runId": parent})["result"]
            if got["claimed"]:
                self.branch(got["runId"], got["step"]["id"])
                continue
            if "waitingOn" not in self.call("workflow_resume", {"runId": parent})["result"]:
                return  # the parent moved on: every branch is done
            time.sleep(0.1)  # held by others (or by a connection that died), or not open yet

    def branch(self, run_id: str, step: str | None) -> None:
        while step is not None:
            answer = self.call(
                "workflow_continue", {"runId": run_id, "stepId": step, "output": OUTPUTS[step]}
            )
            error = answer.get("error")
            if error is not None:
                if error["code"] == -32009:  # accepted before the replica died: carry on from there
                    step = error["data"]["currentStep"]
                    continue
                assert error["code"] in (-32013, -32010), answer  # another holds it now; or it is done
                return
            result = answer["result"]
            assert result["accepted"] is True, answer
            self.acknowledged.append((run_id, step))
            if result["status"] == "completed":  # its last step: the branch is done
                self.completed.append(run_id)
                return
            step = result["step"]["id"]


def test_eight_agents_complete_100_branches_over_two_replicas_one_killed_mid_way(
    replicas: list[HttpServer], postgres_url: str, tmp_path: Path
) -> None:
    parent = fan_out(replicas[0], tmp_path, BRANCHES)["runId"]
    dead = threading.Event()
    agents = [Agent(n, replicas, dead) for n in range(AGENTS)]
    for agent in agents:
        agent.victim = replicas[0]
    began = time.monotonic()
    with ThreadPoolExecutor(AGENTS) as pool:
        futures = [pool.submit(agent.work, parent) for agent in agents]
        while sum(len(a.completed) for a in agents) < KILL_AFTER and time.monotonic() - began < 60:
            time.sleep(0.01)
        replicas[0].proc.kill()  # SIGKILL, with requests in flight
        dead.set()
        at_kill = sum(len(a.completed) for a in agents)
        assert KILL_AFTER <= at_kill < BRANCHES - 20, at_kill  # mid-way: most are left to do
        for future in futures:
            future.result(timeout=180)
    elapsed = time.monotonic() - began
    assert elapsed < 150, f"100 branches took {elapsed:.0f}s: something hangs"

    completions = [run_id for a in agents for run_id in a.completed]
    assert len(completions) == len(set(completions))  # no branch completed twice
    acknowledged = [pair for a in agents for pair in a.acknowledged]
    assert len(acknowledged) == len(set(acknowledged))  # no step accepted twice
    survivor = replicas[1]
    moved_on = post(survivor, "workflow_resume", {"runId": parent})
    assert moved_on["step"]["id"] == "report"  # the parent went on past the loop
    reviews = moved_on["context"]["reviews"]
    assert [(r["item"], r["status"]) for r in reviews] == [(f"f{i}.py", "completed") for i in range(BRANCHES)]
    done = post(
        survivor, "workflow_continue", {"runId": parent, "stepId": "report", "output": "All reviewed."}
    )
    assert done["status"] == "completed"
    store = open_store(postgres_url)
    try:
        parent_events = [(e.type, e.step_id) for e in store.events(parent)]
        assert parent_events.count(("accepted", "each-file")) == 1  # the loop accepted once
        assert parent_events.count(("completed", None)) == 1  # the parent completed once
        branch_ids = [r.id for r in store.list_runs(parent_id=parent, limit=1000)]
        assert len(branch_ids) == BRANCHES
        for run_id in branch_ids:
            run = store.get(run_id)
            events = store.events(run_id)
            assert run is not None and run.status == "completed" and run.accepted == len(STEPS), run
            assert [e.step_id for e in events if e.type == "accepted"] == STEPS, run_id  # each step once
            assert [e.type for e in events].count("completed") == 1
            assert [e.seq for e in events] == list(range(1, len(events) + 1)) and run.events == len(events)
        for run_id, step in acknowledged:  # every acknowledged step is kept
            assert any(e.type == "accepted" and e.step_id == step for e in store.events(run_id))
        assert sum(len(a.acknowledged) for a in agents) >= KILL_AFTER * len(STEPS)
    finally:
        store.close()


def test_two_agents_racing_on_two_replicas_for_one_branch_exactly_one_holds_it(
    replicas: list[HttpServer], postgres_url: str, tmp_path: Path
) -> None:
    for round_ in range(10):
        waiting = fan_out(replicas[0], tmp_path, 1)
        parent, [branch] = waiting["runId"], [b["runId"] for b in waiting["branches"]]
        gate = threading.Barrier(2)

        def race(n: int, parent: str = parent, gate: threading.Barrier = gate, round_: int = round_) -> Any:
            body = {"jsonrpc": "2.0", "id": 1, "method": "workflow_claim", "params": {"runId": parent}}
            headers = HEADERS | {"Mcp-Session-Id": f"racer-{round_}-{n}"}
            with httpx.Client(timeout=30) as own:
                gate.wait(10)
                return own.post(replicas[n].url, json=body, headers=headers).json()["result"]

        with ThreadPoolExecutor(2) as both:
            answers = list(both.map(race, range(2)))
        won = [a for a in answers if a["claimed"]]
        assert len(won) == 1 and won[0]["runId"] == branch, answers
        [lost] = [a for a in answers if not a["claimed"]]
        assert lost["branches"] == {"held": 1, "ended": 0}, lost
        store = open_store(postgres_url)
        try:
            claims = [e for e in store.events(branch) if e.type == "claimed"]
            assert (
                len(claims) == 1
                and claims[0].data["holder"] == f"http-session:racer-{round_}-{answers.index(won[0])}"
            )
        finally:
            store.close()


@pytest.fixture
def balanced(tmp_path: Path, postgres_url: str) -> Iterator[list[HttpServer]]:
    """Two replicas whose leases outlast any pause of a loaded machine: a refusal here is
    the holder not being known, never its lease running out."""
    write(tmp_path / "flows", review_files(max_parallel=MAX_PARALLEL))
    common = ("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", postgres_url)
    with ExitStack() as stack:
        yield [stack.enter_context(HttpServer(*common, "--lease-seconds", "600")) for _ in range(2)]


def test_agents_without_a_session_header_keep_their_branches_by_lease_across_alternating_replicas(
    balanced: list[HttpServer], tmp_path: Path
) -> None:
    count = 40
    parent = fan_out(balanced[0], tmp_path, count)["runId"]
    refused: list[dict[str, Any]] = []
    done: list[str] = []

    def agent(n: int) -> None:
        turn = n  # the replica of this agent's next call: every call goes to the other one
        with httpx.Client(timeout=60) as client:

            def call(name: str, params: dict[str, Any]) -> dict[str, Any]:
                nonlocal turn
                body = {"jsonrpc": "2.0", "id": 1, "method": name, "params": params}
                turn += 1
                answer: dict[str, Any] = client.post(
                    balanced[turn % 2].url, json=body, headers=HEADERS
                ).json()
                return answer

            while True:
                got = call("workflow_claim", {"runId": parent})["result"]
                if not got["claimed"]:
                    if "waitingOn" not in call("workflow_resume", {"runId": parent})["result"]:
                        return
                    time.sleep(0.05)  # the next branches open as these complete
                    continue
                run_id, step, lease = got["runId"], got["step"]["id"], got["lease"]["token"]
                assert "result" in call("workflow_resume", {"runId": run_id, "lease": lease})
                while step is not None:
                    params = {"runId": run_id, "stepId": step, "output": OUTPUTS[step], "lease": lease}
                    answer = call("workflow_continue", params)
                    if "error" in answer:
                        refused.append(answer["error"])
                        break
                    result = answer["result"]
                    step = None if result["status"] == "completed" else result["step"]["id"]
                    if step is None:
                        done.append(run_id)

    with ThreadPoolExecutor(AGENTS) as pool:
        for future in [pool.submit(agent, n) for n in range(AGENTS)]:
            future.result(timeout=300)
    assert refused == []  # without the token, each call after the first was another holder's: -32013
    assert len(done) == count and len(set(done)) == count
    moved_on = post(balanced[1], "workflow_resume", {"runId": parent})
    assert moved_on["step"]["id"] == "report"
