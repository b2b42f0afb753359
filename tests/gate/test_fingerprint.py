"""The stat fingerprint's racy rule (gate/fingerprint.py): an entry not older than the
clock by the margin could still change unseen, so no fingerprint is kept of it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

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


def test_what_is_absent_from_a_folder_the_fingerprint_keeps_is_not_read_again(world: GateWorld) -> None:
    repository(world, world.workspace)
    (world.workspace / ".claude").mkdir()
    folder = baseline.gate_folder(str(world.handrail_home), "run-1")
    settle(world.workspace / ".claude")
    found = taken(world, folder, fingerprint.clock(folder))
    assert found is not None
    git = str(world.workspace / ".git")
    # the git folder's times move with every `git status` (the index's lock): it vouches
    # for nothing, and what a command in progress would leave in it is looked for again
    assert git not in found.paths
    assert os.path.join(git, "MERGE_HEAD") in found.paths
    assert str(world.workspace / ".claude" / "settings.json") not in found.paths


def test_a_git_status_leaves_the_fingerprint_as_it_was(world: GateWorld) -> None:
    """Every `git status` takes the index's lock in the git folder, which moves the
    folder's times though nothing changed: the fingerprint does not hold them."""
    repository(world, world.workspace)
    folder = baseline.gate_folder(str(world.handrail_home), "run-1")
    settle(world.workspace / ".git" / "index")
    found = taken(world, folder, fingerprint.clock(folder))
    assert found is not None and fingerprint.unchanged(found)
    lock = world.workspace / ".git" / "index.lock"
    lock.write_bytes(b"")  # what git status does in the git folder, whether or not it
    lock.unlink()  # then writes the index (a refreshed index is a change of the index)
    changed = [
        path for path, was in zip(found.paths, found.stats, strict=True) if fingerprint.stat_of(path) != was
    ]
    assert changed == []


@pytest.mark.parametrize("made", [".git/MERGE_HEAD", ".claude/settings.json", ".codex/hooks.json"])
def test_an_entry_made_where_the_fingerprint_found_none_is_a_change(world: GateWorld, made: str) -> None:
    repository(world, world.workspace)
    (world.workspace / ".claude").mkdir()
    folder = baseline.gate_folder(str(world.handrail_home), "run-1")
    settle(world.workspace / ".claude")
    found = taken(world, folder, fingerprint.clock(folder))
    assert found is not None and fingerprint.unchanged(found)
    path = world.workspace / made
    path.parent.mkdir(exist_ok=True)
    path.write_text("{}\n")
    assert not fingerprint.unchanged(found)
