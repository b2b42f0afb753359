"""Hostile folder trees (benchmarks/hostile_trees.py), a few seeds per test run: a real
`handrail start` serves each tree while a thread keeps changing it, and every request
gets an answer that is not an internal error, within the generator's deadline."""

from __future__ import annotations

import sys

import pytest

from benchmarks.hostile_trees import exercise

pytestmark = pytest.mark.slow


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS file systems refuse names that are not UTF-8")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_hostile_tree_changing_while_served_never_stalls_or_crashes_the_server(seed: int) -> None:
    assert exercise(seed, rounds=3) > 3
