"""The HTTP memory benchmark reads both servers' resident sets under load (no figure is
asserted); the full benchmark is `python -m benchmarks.http_memory`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchmarks import http_memory

pytestmark = pytest.mark.slow


def test_the_quick_run_reads_both_servers_resident_sets_under_load(tmp_path: Path) -> None:
    assert http_memory.main(["--quick", "--clients", "2", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "http-memory-quick.json").read_text())
    assert set(results["servers"]) == set(http_memory.CONFIGS)
    for measured in results["servers"].values():
        assert measured["requests"] > 0 and measured["start_kb"] > 0 and measured["end_kb"] > 0
    report = (tmp_path / "http-memory-quick.md").read_text()
    assert "| a timer per answer (baseline) |" in report and "end / start" in report


def test_the_resident_set_is_read_from_proc_for_a_live_process() -> None:
    assert http_memory.resident_kb(os.getpid()) > 1000
