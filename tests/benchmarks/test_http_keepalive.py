"""The kept-alive HTTP benchmark's measuring loop works end to end (no timing is asserted);
the full benchmark is `python -m benchmarks.http_keepalive`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import http_keepalive

pytestmark = pytest.mark.slow


def test_the_quick_run_keeps_one_connection_per_client_and_reports_both_servers(tmp_path: Path) -> None:
    assert http_keepalive.main(["--quick", "--clients", "2", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "http-keepalive-quick.json").read_text())
    assert set(results["per_second"]) == set(http_keepalive.CONFIGS)
    assert all(rate > 0 for rate in results["per_second"].values())
    assert results["connections"] == {config: 2 for config in http_keepalive.CONFIGS}
    assert results["ratio_to_baseline"][http_keepalive.CONFIGS[1]] == 1.0
    report = (tmp_path / "http-keepalive-quick.md").read_text()
    assert "| without TCP_NODELAY (baseline) |" in report and "p50 ms" in report


def test_the_report_gives_each_server_against_the_baseline() -> None:
    text = http_keepalive.report(
        {
            "clients": 8,
            "seconds": 3,
            "rounds": 3,
            "per_second": dict(zip(http_keepalive.CONFIGS, (600.0, 170.0), strict=True)),
            "p50_ms": dict(zip(http_keepalive.CONFIGS, (12.5, 44.0), strict=True)),
            "ratio_to_baseline": dict(zip(http_keepalive.CONFIGS, (600 / 170, 1.0), strict=True)),
        }
    )
    assert "| TCP_NODELAY (handrail serve) | 600 | 12.5 | 3.53x |" in text
    assert "| without TCP_NODELAY (baseline) | 170 | 44.0 | 1.00x |" in text
