"""HANDRAIL_HOME moves everything handrail keeps in ~/.handrail, and the test suite
itself never reads the real home. The commands run as real subprocesses."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from handrail.cli.setup import SAMPLE
from handrail.home import handrail_home

pytestmark = pytest.mark.slow


def handrail(home: Path, handrail_home: Path | None, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "HANDRAIL_HOME"}
    environ["HOME"] = str(home)
    if handrail_home is not None:
        environ["HANDRAIL_HOME"] = str(handrail_home)
    return subprocess.run(
        [sys.executable, "-m", "handrail", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=home,
        env=environ,
        timeout=60,
    )


def a_users_first_workflow(home: Path) -> Path:
    """What `handrail init` leaves in a user's ~/.handrail, with a name of its own."""
    path = home / ".handrail" / "workflows" / "my-first-workflow.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({**SAMPLE, "id": "from-the-real-home"}), encoding="utf-8")
    return path


def test_init_writes_into_handrail_home_and_sources_reads_only_that_one(tmp_path: Path) -> None:
    home, moved = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    a_users_first_workflow(home)
    done = handrail(home, moved, "init")
    assert done.returncode == 0, done.stderr
    assert (moved / "workflows" / "my-first-workflow.json").is_file()
    assert str(moved / "workflows" / "my-first-workflow.json") in done.stdout
    assert sorted(p.name for p in (home / ".handrail" / "workflows").iterdir()) == ["my-first-workflow.json"]

    sources = handrail(home, moved, "sources", "--no-bundled")
    assert sources.returncode == 0, sources.stderr
    assert f"{moved / 'workflows'}  [1 workflow]" in sources.stdout
    assert str(home / ".handrail") not in sources.stdout
    listing = handrail(home, moved, "list", "--no-bundled", "--format", "json")
    ids = [w["id"] for w in json.loads(listing.stdout)["workflows"]]
    assert ids == ["my-first-workflow"], listing.stdout


def test_the_default_run_database_lives_in_handrail_home(tmp_path: Path) -> None:
    home, moved = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    (home / ".handrail").mkdir()
    (moved / "workflows").mkdir(parents=True)
    (moved / "workflows" / "first.json").write_text(json.dumps(SAMPLE), encoding="utf-8")
    start = {"workflowId": "my-first-workflow", "goal": "see where the run goes", "workspace": str(home)}
    script = (
        "from handrail.catalog import Catalog, default_sources\n"
        "from handrail.service.core import Service\n"
        "import json, sys\n"
        "service = Service(Catalog(default_sources(bundled=False)))\n"
        "print(service.call('workflow_start', json.loads(sys.argv[1]))['runId'])\n"
        "service.close()\n"
    )
    environ = {**os.environ, "HOME": str(home), "HANDRAIL_HOME": str(moved)}
    started = subprocess.run(
        [sys.executable, "-c", script, json.dumps(start)],
        capture_output=True,
        text=True,
        env=environ,
        cwd=home,
        timeout=60,
    )
    assert started.returncode == 0, started.stderr
    assert (moved / "handrail.db").is_file()
    assert list((home / ".handrail").iterdir()) == []
    listed = handrail(home, moved, "runs", "list")
    assert started.stdout.strip() in listed.stdout


def test_a_users_real_handrail_folder_never_reaches_a_test(tmp_path: Path) -> None:
    """The suite's own environment: HOME and HANDRAIL_HOME are private folders, so what
    the person running the tests keeps in ~/.handrail or ~/.workrail is never read."""
    real = Path(pwd.getpwuid(os.getuid()).pw_dir)
    assert Path.home() != real
    assert not handrail_home().is_relative_to(real / ".handrail")
    assert not Path.home().is_relative_to(real / ".handrail")
    # and a workflow left in the (private) HOME's ~/.handrail is not served when
    # HANDRAIL_HOME points elsewhere, as the suite's does
    a_users_first_workflow(Path.home())
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "list", "--no-bundled", "--format", "json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["workflows"] == []
