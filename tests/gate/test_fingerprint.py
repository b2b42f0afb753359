"""The stat fingerprint's racy rule (gate/fingerprint.py): an entry not older than the
clock by the margin could still change unseen, so no fingerprint is kept of it."""

from __future__ import annotations

import os
import time
from pathlib import Path

from handrail.gate import baseline, fingerprint
from tests.gate.runs import GateWorld
from tests.gate.test_gate_http_effects import repository


def taken(world: GateWorld, folder: baseline.GateFolder, since: int) -> fingerprint.Fingerprint | None:
    repo = baseline.find_repo(str(world.workspace))
    assert repo is not None
    baseline.take(str(world.workspace), folder, repo, (str(world.handrail_home),))
    home = (str(world.handrail_home),)
    return fingerprint.take(repo, str(world.workspace), folder.index_file, home, since, "a" * 64, "plan")


def settle(path: Path) -> None:
    ctime = os.lstat(path).st_ctime_ns
    margin = fingerprint.COARSE_MARGIN_NS if ctime % 1_000_000_000 == 0 else fingerprint.FINE_MARGIN_NS
    time.sleep(margin / 1e9 + 0.1)


def test_a_file_written_within_the_margin_before_the_clock_gives_no_fingerprint(world: GateWorld) -> None:
    repository(world, world.workspace)
    folder = baseline.gate_folder(str(world.handrail_home), "run-1")
    settle(world.workspace / "src" / "cart.py")
    assert taken(world, folder, fingerprint.clock(folder)) is not None  # everything older: kept
    (world.workspace / "docs" / "plan.md").write_text("# Plan, just now\n")
    assert taken(world, folder, fingerprint.clock(folder)) is None


def test_a_repository_inside_the_work_tree_gives_no_fingerprint(world: GateWorld) -> None:
    repository(world, world.workspace)
    repository(world, world.workspace / "vendor")
    folder = baseline.gate_folder(str(world.handrail_home), "run-1")
    settle(world.workspace / "vendor" / "src" / "cart.py")
    assert taken(world, folder, fingerprint.clock(folder)) is None
