"""A compaction is recorded once while it is pending: Gemini CLI 0.61 runs `PreCompress`
before every request to the model, compressing or not, and the run's timeline would
otherwise get a `compact` event for each."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gate.runs import GateWorld


@pytest.fixture
def world(tmp_path: Path) -> Iterator[GateWorld]:
    found = GateWorld(tmp_path)
    found.start("plan")
    yield found
    found.close()


def said(world: GateWorld, event: str, **fields: str) -> str:
    body = {"session_id": "g-1", "cwd": str(world.workspace), "timestamp": "2026-05-02T10:00:00Z", **fields}
    ran = world.gate(event, json.dumps(body), "--harness", "gemini")
    assert ran.exit_code == 0, ran.stderr
    return ran.stdout


def test_a_compaction_announced_before_each_request_is_recorded_once_until_the_next_prompt(
    world: GateWorld,
) -> None:
    for _ in range(3):
        said(world, "pre-compress", hook_event_name="PreCompress", trigger="auto")
    compacts = [e for e in world.gate_events() if e["event"] == "compact"]
    assert len(compacts) == 1
    told = said(world, "before-agent", hook_event_name="BeforeAgent", prompt="go on")
    assert "Next call: workflow_continue" in told
    # delivered: the next prompt gets the one-line reminder, and a later compaction is recorded anew
    assert "Next call" not in said(world, "before-agent", hook_event_name="BeforeAgent", prompt="and?")
    said(world, "pre-compress", hook_event_name="PreCompress", trigger="auto")
    assert len([e for e in world.gate_events() if e["event"] == "compact"]) == 2
