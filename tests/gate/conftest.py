"""What the gate's tests share: each test's own `world` (a home, HANDRAIL_HOME, a
workspace and the run store, all in the test's folder), closed after it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gate.runs import GateWorld


@pytest.fixture
def world(tmp_path: Path) -> Iterator[GateWorld]:
    found = GateWorld(tmp_path)
    yield found
    found.close()
