"""Golden cases: spec/cases/checks/<case>.json set up a real workspace (files, links,
git commits), evaluate the checks, and compare with the expected results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from handrail.checks import CheckConfig, evaluate_checks
from tests.checks.workspaces import compiled_checks, set_up
from tests.conftest import SPEC

CASES = sorted((SPEC / "cases" / "checks").glob("*.json"))
EXPECTED_KEYS = {"check", "passed", "whyContains", "exitCode", "argv", "outputContains", "timedOut"}


def _load(case: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(case.read_text("utf-8"))
    return loaded


def test_there_is_a_golden_case_for_every_check_type() -> None:
    types = {check["type"] for case in CASES for check in _load(case)["checks"]}
    assert types == {"command", "file", "git"}
    assert len(CASES) >= 30


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_case_is_well_formed(case: Path) -> None:
    data = _load(case)
    assert set(data) <= {"description", "setup", "config", "origin", "context", "checks", "expected"}
    assert data["description"]
    for item in data["expected"]:
        assert set(item) <= EXPECTED_KEYS, item


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_case_gives_the_expected_results(case: Path, tmp_path: Path) -> None:
    data = _load(case)
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    baseline = set_up(data["setup"], workspace, outside)
    settings = data.get("config", {})
    config = CheckConfig(
        allow_commands=settings.get("allowCommands", False),
        commands={k: tuple(v) for k, v in settings.get("commands", {}).items()},
    )
    origin = data.get("origin", "source")
    checks = compiled_checks(data["checks"], origin)
    results = evaluate_checks(checks, str(workspace), data.get("context", {}), baseline, config, origin)
    expected = data["expected"]
    assert len(results) == len(expected), [r.to_event() for r in results]
    for got, want in zip(results, expected, strict=True):
        event = got.to_event()
        assert got.type == want["check"]
        assert got.passed is want["passed"], event
        for part in want.get("whyContains", ()):
            assert part in got.why, event
        if "exitCode" in want:
            assert got.exit_code == want["exitCode"], event
        if "argv" in want:
            assert got.argv == tuple(want["argv"]), event
        if "outputContains" in want:
            assert got.output is not None and want["outputContains"] in got.output, event
        assert got.timed_out is want.get("timedOut", False), event
