"""The test PostgreSQL server (tests/postgres.py) dies with the process that started it,
however it dies, and the clusters of makers that are gone are reaped, no others."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_postgres
from tests.helpers.server import ROOT
from tests.postgres import reap_orphans, unavailable

pytestmark = pytest.mark.slow

# Starts a cluster through the helper the tests use, says where it is, then waits.
MAKER = """
import sys, time
from pathlib import Path
from tests.postgres import Cluster
cluster = Cluster(fsync=False)
postmaster = (cluster.data / "postmaster.pid").read_text().split()[0]
print(cluster.folder, postmaster, cluster._watchdog.pid, flush=True)
time.sleep(600)
"""
WAIT_S = 60  # a bound on the wait, not a speed: the assertion is that it ends


def _make(temp: Path) -> tuple[subprocess.Popen[str], Path, int, int]:
    """A process holding a cluster in `temp`: it, the cluster's folder, postmaster and watchdog."""
    maker = subprocess.Popen(
        [sys.executable, "-c", MAKER],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(temp), "PYTHONPATH": str(ROOT)},
    )
    assert maker.stdout is not None
    folder, postmaster, watchdog = maker.stdout.readline().split()
    return maker, Path(folder), int(postmaster), int(watchdog)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie has ended: only its parent's wait is missing
    stat = Path(f"/proc/{pid}/stat").read_text("ascii", "replace")
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _gone(pid: int, folder: Path) -> bool:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and (_alive(pid) or folder.exists()):
        time.sleep(0.1)
    return not _alive(pid) and not folder.exists()


def _stop_left_over(pid: int) -> None:
    """A failed test must not leak its server either."""
    if _alive(pid):
        os.kill(pid, signal.SIGQUIT)  # the postmaster's immediate shutdown


@pytest.fixture
def temp() -> Iterator[Path]:
    """A temporary folder of the test's own for the clusters; beside pytest's own folders,
    which as root the `postgres` user running the cluster could not enter."""
    require_postgres(unavailable())
    folder = Path(tempfile.mkdtemp(prefix="handrail-pgtest-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_cluster_stops_and_its_folder_goes_when_its_maker_is_killed_with_sigkill(temp: Path) -> None:
    maker, folder, postmaster, _ = _make(temp)
    try:
        assert _alive(postmaster) and folder.exists()
        maker.kill()
        maker.wait()
        assert _gone(postmaster, folder), f"postmaster {postmaster} or {folder} outlived its maker"
    finally:
        maker.kill()
        _stop_left_over(postmaster)


def test_only_clusters_whose_maker_is_gone_are_reaped(temp: Path) -> None:
    orphaned, orphan_folder, orphan_postmaster, watchdog = _make(temp)
    living, living_folder, living_postmaster, _ = _make(temp)
    try:
        os.kill(watchdog, signal.SIGKILL)  # maker and watchdog both killed: nothing cleaned up
        orphaned.kill()
        orphaned.wait()
        time.sleep(0.5)
        assert _alive(orphan_postmaster) and orphan_folder.exists()
        (temp / "handrail-pg-unowned").mkdir()  # no owner file: not provably orphaned
        assert reap_orphans(temp) == [orphan_folder]
        assert not _alive(orphan_postmaster) and not orphan_folder.exists()
        assert _alive(living_postmaster) and living_folder.exists()
        assert (temp / "handrail-pg-unowned").exists()
    finally:
        for maker in (orphaned, living):
            maker.kill()
            maker.wait()
        _stop_left_over(orphan_postmaster)
        try:
            assert _gone(living_postmaster, living_folder)
        finally:
            _stop_left_over(living_postmaster)
