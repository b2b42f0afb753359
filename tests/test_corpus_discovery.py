"""Where the WorkRail corpus is missing, the tests that need it skip and say why;
under CI such a skip fails the run (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

ONE_CORPUS_TEST = "tests/compiler/test_corpus.py::test_invalid_workflow_hints_at_a_valid_id"


PARAMETRIZED_OVER_THE_CORPUS = "tests/engine/test_walk_corpus.py"


def _pytest(tmp_path: Path, *tests: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("CI", "HANDRAIL_WORKRAIL_CORPUS")}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-rs", "-p", "no:randomly", *(tests or [ONE_CORPUS_TEST])],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environ,
        timeout=120,
    )


def test_a_missing_corpus_skips_its_tests_saying_where_it_looked(tmp_path: Path) -> None:
    nowhere = tmp_path / "nowhere"
    done = _pytest(tmp_path, HANDRAIL_WORKRAIL_CORPUS=str(nowhere))
    assert done.returncode == 0, done.stdout
    assert "1 skipped" in done.stdout
    assert f"HANDRAIL_WORKRAIL_CORPUS={nowhere} is not a folder" in done.stdout


def test_under_ci_a_skipped_corpus_test_fails_the_run(tmp_path: Path) -> None:
    done = _pytest(tmp_path, HANDRAIL_WORKRAIL_CORPUS=str(tmp_path / "nowhere"), CI="true")
    assert done.returncode == 1, done.stdout
    assert "1 error" in done.stdout  # the skip happens while the test is set up
    assert "CI must run every corpus test, and this one skipped" in done.stdout


def test_a_test_parametrized_over_the_corpus_files_skips_saying_where_it_looked(tmp_path: Path) -> None:
    nowhere = tmp_path / "nowhere"
    done = _pytest(tmp_path, PARAMETRIZED_OVER_THE_CORPUS, HANDRAIL_WORKRAIL_CORPUS=str(nowhere))
    assert done.returncode == 0, done.stdout
    assert "1 skipped" in done.stdout
    assert f"HANDRAIL_WORKRAIL_CORPUS={nowhere} is not a folder" in done.stdout
    assert "empty parameter set" not in done.stdout


def test_the_benchmarks_the_tests_run_find_the_corpus_where_the_tests_do(tmp_path: Path) -> None:
    named = tmp_path / "corpus-elsewhere"
    named.mkdir()
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "from benchmarks import fuzz_long, inprocess, stdio_bench, typed_results\n"
            "print(fuzz_long.CORPUS, inprocess.CORPUS, stdio_bench.CORPUS, sep='\\n')",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "HANDRAIL_WORKRAIL_CORPUS": str(named)},
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [str(named)] * 3
