"""The typed-results benchmark measures both trees on every figure (no timing is asserted)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks import typed_results

pytestmark = pytest.mark.slow


@pytest.mark.corpus
def test_one_round_against_a_baseline_reports_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    assert typed_results.main(["--baseline", "HEAD", "--rounds", "1"]) == 0
    printed = capsys.readouterr().out
    results: dict[str, Any] = json.loads(printed[printed.index("{") :])
    assert set(results) == {f"{figure} {kind}" for figure, kind in typed_results.FIGURES}
    for name in ("service next", "service validate", "handler next", "handler validate"):
        assert set(results[name]) == {"before (HEAD)", "after"}
        assert all(row["best_us"] > 0 for row in results[name].values())
    # HEAD has typed results too: both trees measure the engine alone
    assert set(results["engine next"]) == {"before (HEAD)", "after"}
