"""The replicas benchmark's measuring loop works end to end (no timing is asserted);
the full benchmark, with PostgreSQL, is `python -m benchmarks.replicas_bench`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import replicas_bench
from benchmarks.runs_bench import WORKFLOW
from tests.helpers.http import HttpServer

pytestmark = pytest.mark.slow


def test_the_throughput_loop_counts_accepted_continues_on_every_server(tmp_path: Path) -> None:
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "bench-run.json").write_text(json.dumps(WORKFLOW))
    database = f"sqlite:///{tmp_path / 'runs.db'}"
    with HttpServer("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", database) as one:
        rate = replicas_bench.throughput([one.url, one.url], clients=2, seconds=0.3)
    assert rate > 0


def test_the_report_names_every_configuration_against_sqlite() -> None:
    figures = dict(zip(replicas_bench.CONFIGS, (400.0, 200.0, 300.0, 400.0), strict=True))
    text = replicas_bench.report(
        {
            "clients": 16,
            "seconds": 5,
            "rounds": 3,
            "per_second": figures,
            "ratio_to_sqlite": {k: v / 400 for k, v in figures.items()},
        }
    )
    assert "| postgresql, 2 replicas | 300 | 0.75x |" in text
    assert "| sqlite, 1 process | 400 | 1.00x |" in text
