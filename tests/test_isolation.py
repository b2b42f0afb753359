"""Tests own what they touch: a tester whose HANDRAIL_HOME holds workflows (after
`handrail init`), a database URL or a token runs the suite as anybody else does.
The servers the tests start, at any fixture scope, get a home of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import environment
from tests.helpers.environment import child_env
from tests.helpers.server import ROOT

PROBE = ROOT / "tests" / "helpers" / "isolation_probe.py"
SAMPLE = "my-first-workflow"


def _testers_environment(tmp_path: Path) -> dict[str, str]:
    """A tester's shell: a handrail home filled by `handrail init`, and more of handrail's settings."""
    home = tmp_path / "testers-handrail"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env |= {"HANDRAIL_HOME": str(home), "HANDRAIL_TOKEN": "the-testers-token", "HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-m", "handrail", "init"], env=env, check=True, capture_output=True)
    return env | {"PROBE_TESTERS_HOME": str(home)}


@pytest.mark.slow
def test_servers_started_under_a_testers_initialised_home_list_none_of_its_workflows(tmp_path: Path) -> None:
    env = _testers_environment(tmp_path)
    # the tester's home is real: handrail itself, run in that shell, lists its sample
    listing = subprocess.run(
        [sys.executable, "-m", "handrail", "list", "--no-bundled", "--format", "json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert SAMPLE in {w["id"] for w in json.loads(listing.stdout)["workflows"]}

    probe = subprocess.run(
        [sys.executable, "-m", "pytest", str(PROBE), "-o", "addopts=", "-q", "-p", "no:cacheprovider"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert probe.returncode == 0, probe.stdout[-3000:] + probe.stderr[-2000:]
    assert "4 passed" in probe.stdout, probe.stdout[-3000:]


def test_a_child_gets_none_of_the_testers_settings_but_keeps_a_tests_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    testers = {"HANDRAIL_HOME": "/the/testers/home", "HANDRAIL_TOKEN": "the-testers-token"}
    monkeypatch.setattr(environment, "CALLER", testers)
    shell = {**testers, "PATH": "/bin", "HANDRAIL_WORKFLOWS": "/flows", "HANDRAIL_WORKRAIL_CORPUS": "/c"}
    assert child_env(tmp_path, shell) == {
        "PATH": "/bin",
        "HOME": str(tmp_path),
        "HANDRAIL_HOME": str(tmp_path / ".handrail"),
    }
    own = child_env(tmp_path, {**shell, "HANDRAIL_TOKEN": "a-tests-own", "HANDRAIL_HOME": "/a/tests/own"})
    assert own["HANDRAIL_TOKEN"] == "a-tests-own" and own["HANDRAIL_HOME"] == "/a/tests/own"
