"""The runs benchmark runs end to end and reports every figure (no timing is asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import runs_bench

pytestmark = pytest.mark.slow


def test_the_quick_runs_benchmark_writes_a_complete_report(tmp_path: Path) -> None:
    assert runs_bench.main(["--quick", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "runs-quick.json").read_text())
    assert set(results["p50_us"]) == {"continue", "validate", "next", "commit"}
    assert results["ratio"] > 0 and results["target_ratio"] == 1.5
    assert set(results["spawn_to_initialize_ms"]) == {"no_database", "one_open_run"}
    report = (tmp_path / "runs-quick.md").read_text()
    assert "continue p50 / (validate + next + commit) p50" in report
