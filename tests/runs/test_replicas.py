"""Several `handrail serve` replicas on one PostgreSQL database (issue 17): a run
started on one continues on another, two replicas racing on one step accept exactly
one submission, and a replica killed mid-request loses nothing it acknowledged."""

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
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

pytestmark = pytest.mark.slow

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
RUNS = 200
CLIENTS = 32
PARTS = ["one", "two"]
RACED = range(0, RUNS, 8)  # runs whose plan is sent to both replicas at once
OUTPUTS = {"plan": "Plan: both parts.", "build": "Built it.", "report": "Reported."}


@pytest.fixture
def replicas(tmp_path: Path, postgres_url: str) -> Iterator[list[HttpServer]]:
    write(tmp_path / "flows", build_feature())
    common = ("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", postgres_url)
    with ExitStack() as stack:
        yield [stack.enter_context(HttpServer(*common)) for _ in range(2)]


def call(client: httpx.Client, server: HttpServer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer: dict[str, Any] = client.post(server.url, json=body, headers=HEADERS).json()
    return answer


def start(client: httpx.Client, server: HttpServer, n: int, parts: list[str]) -> dict[str, Any]:
    params = {"workflowId": WORKFLOW_ID, "goal": f"Run {n}", "context": {"parts": parts}}
    return call(client, server, "workflow_start", params)


def test_two_replicas_drive_32_clients_through_200_runs_with_one_acceptance_per_step(
    replicas: list[HttpServer], postgres_url: str
) -> None:
    local = threading.local()
    raced: list[tuple[str, list[dict[str, Any]]]] = []

    def client() -> httpx.Client:
        if not hasattr(local, "client"):
            local.client = httpx.Client(timeout=60)
        made: httpx.Client = local.client
        return made

    def race(run_id: str) -> list[dict[str, Any]]:
        """The plan sent to both replicas at the same moment."""
        gate = threading.Barrier(2)

        def send(server: HttpServer) -> dict[str, Any]:
            with httpx.Client(timeout=60) as own:
                gate.wait(10)
                return call(own, server, "workflow_continue",
                            {"runId": run_id, "stepId": "plan", "output": OUTPUTS["plan"]})  # fmt: skip

        with ThreadPoolExecutor(2) as both:
            return list(both.map(send, replicas))

    def drive(n: int) -> str:
        here = n % 2  # the replica each call goes to alternates, starting with this one
        started = start(client(), replicas[here], n, PARTS)
        assert "result" in started, started
        run_id: str = started["result"]["runId"]
        step = started["result"]["step"]["id"]
        if n in RACED:
            answers = race(run_id)
            raced.append((run_id, answers))
            [won] = [a["result"] for a in answers if "result" in a]
            step = won["step"]["id"]
        while True:
            here = 1 - here
            answer = call(client(), replicas[here], "workflow_continue",
                          {"runId": run_id, "stepId": step, "output": OUTPUTS[step]})  # fmt: skip
            result = answer.get("result")
            assert result is not None and result["accepted"] is True, answer
            if result["status"] == "completed":
                return run_id
            step = result["step"]["id"]

    began = time.monotonic()
    with ThreadPoolExecutor(CLIENTS) as clients:
        run_ids = list(clients.map(drive, range(RUNS)))
    elapsed = time.monotonic() - began
    assert elapsed < 120, f"200 runs took {elapsed:.0f}s: something hangs"

    assert len(raced) == len(RACED)
    for run_id, answers in raced:
        accepted = [a for a in answers if a.get("result", {}).get("accepted") is True]
        refused = [a["error"] for a in answers if "error" in a]
        assert len(accepted) == 1 and len(refused) == 1, (run_id, answers)
        assert refused[0]["code"] == -32009 and refused[0]["data"]["currentStep"] == "build", refused

    store = open_store(postgres_url)
    try:
        expected = [("started", None), ("accepted", "plan"), ("accepted", "build"),
                    ("accepted", "build"), ("accepted", "report"), ("completed", None)]  # fmt: skip
        for run_id in run_ids:
            events = store.events(run_id)
            assert [e.seq for e in events] == list(range(1, len(expected) + 1)), run_id
            assert [(e.type, e.step_id) for e in events] == expected, run_id
            run = store.get(run_id)
            assert run is not None and run.status == "completed" and run.accepted == 4
            assert run.events == len(expected)
        assert len(set(run_ids)) == RUNS
    finally:
        store.close()


def test_a_replica_killed_mid_request_loses_nothing_it_acknowledged(
    replicas: list[HttpServer], postgres_url: str
) -> None:
    victim, survivor = replicas
    parts = [f"p{i}" for i in range(60)]
    acknowledged: dict[str, int] = {}  # run -> accepted submissions the victim answered
    stop = threading.Event()

    def drive(n: int) -> str:
        with httpx.Client(timeout=30) as own:
            started = start(own, victim, n, parts)
            run_id: str = started["result"]["runId"]
            acknowledged[run_id] = 0
            step = started["result"]["step"]["id"]
            while not stop.is_set():
                try:
                    answer = call(own, victim, "workflow_continue",
                                  {"runId": run_id, "stepId": step, "output": OUTPUTS[step]})  # fmt: skip
                except httpx.TransportError:
                    break  # killed: this submission was never acknowledged
                assert answer["result"]["accepted"] is True, answer
                acknowledged[run_id] += 1
                step = answer["result"]["step"]["id"]
        return run_id

    with ThreadPoolExecutor(6) as clients:
        futures = [clients.submit(drive, n) for n in range(6)]
        deadline = time.monotonic() + 30
        while sum(acknowledged.values()) < 40 and time.monotonic() < deadline:
            time.sleep(0.01)
        victim.proc.kill()  # SIGKILL, with requests in flight
        stop.set()
        run_ids = [f.result() for f in futures]

    assert sum(acknowledged.values()) >= 40
    store = open_store(postgres_url)
    try:
        for run_id in run_ids:
            run = store.get(run_id)
            events = store.events(run_id)
            assert run is not None and [e.seq for e in events] == list(range(1, len(events) + 1))
            accepted = [e for e in events if e.type == "accepted"]
            # every acknowledged submission is there; at most the one in flight more
            assert acknowledged[run_id] <= len(accepted) <= acknowledged[run_id] + 1, run_id
            assert run.accepted == len(accepted) and run.events == len(events), "no half-written run"
    finally:
        store.close()

    with httpx.Client(timeout=30) as own:  # the survivor carries on every run
        for run_id in run_ids:
            resumed = call(own, survivor, "workflow_resume", {"runId": run_id})["result"]
            step = resumed["step"]["id"]
            answer = call(own, survivor, "workflow_continue",
                          {"runId": run_id, "stepId": step, "output": OUTPUTS[step]})  # fmt: skip
            assert answer["result"]["accepted"] is True, answer
