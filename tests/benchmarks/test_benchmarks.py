"""The benchmarks measure right answers: every workload's answer is snapshotted,
handrail agrees with the naive baseline (the whole `next` answer, the `validate`
verdict), and the quick run produces a complete report (no timing is asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import instructions, run, stdio_bench
from benchmarks.inprocess import workloads

# served or walked workflows come from the WorkRail corpus
pytestmark = [pytest.mark.corpus, pytest.mark.slow]


def test_every_workload_answer_matches_its_snapshot(snapshot: Any) -> None:
    answers = {w.name: w.answer() for w in workloads()}
    assert answers == snapshot


def test_handrail_and_the_naive_baseline_agree_on_every_decision() -> None:
    disagreements = [w.name for w in workloads() if w.agree is not None and not w.agree()]
    assert disagreements == []


def test_there_are_workloads_of_every_kind() -> None:
    kinds = {w.kind for w in workloads()}
    assert kinds == {"compile", "next", "validate"}


@pytest.mark.timeout_free
def test_the_quick_run_writes_a_complete_report(tmp_path: Path) -> None:
    assert run.main(["--quick", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "quick.json").read_text())
    assert set(results["in_process"]["summary"]) == {"compile", "next", "validate"}
    stdio = results["stdio"]
    requests = {"list", "get", "next-start", "next-midway", "validate"}
    requests |= {"call-get", "call-next-midway", "call-validate"}
    for server in ("handrail", "floor", "replay"):
        assert stdio[server]["spawn_to_init_ms"] > 0
        assert set(stdio[server]["tools"]) == requests
    report = (tmp_path / "quick.md").read_text()
    assert "p50 / floor" in report and "p50 / replay" in report and "median speed-up" in report


def test_the_replay_floor_answers_what_handrail_answered(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    stdio_bench.record(stdio_bench.handrail_command(), answers)
    handrail = stdio_bench.Server(stdio_bench.handrail_command())
    replay = stdio_bench.Server(stdio_bench.replay_command(answers))
    try:
        for body in stdio_bench.requests().values():
            ours, theirs = handrail.request(body), replay.request(body)
            assert "result" in ours and ours == theirs, body
    finally:
        handrail.close()
        replay.close()


def test_the_engine_free_server_answers_what_handrail_answers_from_its_memo() -> None:
    handrail = stdio_bench.Server(stdio_bench.handrail_command())
    engine_free = stdio_bench.Server(stdio_bench.engine_free_command())
    try:
        for body in stdio_bench.requests().values():
            ours = handrail.request(body).get("result")
            # the first call is computed, the second remembered
            first, again = (engine_free.request(body).get("result") for _ in "ab")
            assert ours is not None and ours == first == again, body
        # a step the benchmark never asks for is still the engine's answer, not a remembered one
        other = {"method": "workflow_validate", "params": {**stdio_bench.requests()["validate"]["params"]}}
        other["params"]["output"] = "nothing about tests"
        assert handrail.request(other)["result"] == engine_free.request(other)["result"]
        assert engine_free.request(other)["result"]["valid"] is False
    finally:
        handrail.close()
        engine_free.close()


def test_a_phase_places_client_and_server_on_the_cpus_it_names() -> None:
    if len(stdio_bench.CPUS) < 2:
        pytest.skip("one CPU: nothing to place")
    server = stdio_bench.Server(stdio_bench.floor_command())
    try:
        first, second = stdio_bench.CPUS[:2]
        stdio_bench.placed(server, together=True)
        assert os.sched_getaffinity(0) == {first} == os.sched_getaffinity(server.process.pid)
        stdio_bench.placed(server, together=False)
        assert os.sched_getaffinity(0) == {first}
        assert os.sched_getaffinity(server.process.pid) == {second}
        assert "result" in server.request({"method": "ping", "params": {}})
    finally:
        stdio_bench.placed(server, together=None)
        server.close()
    assert os.sched_getaffinity(0) == set(stdio_bench.CPUS)


def test_the_instruction_count_loops_serve_and_replay_every_scenario(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    stdio_bench.record(stdio_bench.handrail_command(), answers)
    folder = instructions.workflows_folder(tmp_path / "workflows")
    for scenario in instructions.SCENARIOS:
        for server, data in (("handrail", folder), ("replay", str(answers))):
            done = subprocess.run(
                [sys.executable, "-m", "benchmarks.instructions", "--loop", server, scenario, "3", data],
                capture_output=True,
                text=True,
                cwd=stdio_bench.ROOT,
                check=False,
            )
            assert done.returncode == 0, (server, scenario, done.stderr)
