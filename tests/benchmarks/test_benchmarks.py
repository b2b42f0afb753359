"""The benchmarks measure right answers: every workload's answer is snapshotted,
handrail agrees with the naive baseline where both decide the same thing, and the
quick run produces a complete report (no timing is asserted)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import run
from benchmarks.inprocess import workloads

pytestmark = pytest.mark.corpus  # served or walked workflows come from the WorkRail corpus


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
    for server in ("handrail", "floor"):
        assert stdio[server]["spawn_to_init_ms"] > 0
        assert set(stdio[server]["tools"]) == {"list", "get", "next-start", "next-midway", "validate"}
    report = (tmp_path / "quick.md").read_text()
    assert "p50 / floor" in report and "median speed-up" in report
