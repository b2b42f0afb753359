"""The claims benchmark's loop works end to end (no timing is asserted); the full
benchmark, with PostgreSQL, is `python -m benchmarks.claims_bench`."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import claims_bench
from handrail.store import open_store

pytestmark = pytest.mark.slow


def test_the_claim_loop_claims_every_branch_once_over_two_stores(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    first, second = open_store(url), open_store(url)
    try:
        claims_bench.fan_out(first, "run_parent", 30)
        assert claims_bench.claims_per_second([first, second], "run_parent", 30, claimers=4) > 0
        assert {r.holder for r in first.list_runs(parent_id="run_parent")} <= {f"bench-{i}" for i in range(4)}
    finally:
        first.close()
        second.close()


def test_the_report_names_every_configuration() -> None:
    figures = dict(zip(claims_bench.CONFIGS, (500.0, 800.0, 900.0), strict=True))
    text = claims_bench.report({"branches": 1000, "claimers": 8, "rounds": 3, "per_second": figures})
    assert "| postgresql, 2 stores | 900 |" in text and "| sqlite, 1 store | 500 |" in text
