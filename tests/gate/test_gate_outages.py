"""When the run store cannot be read, the gate answers by `--on-error` and keeps a note
in HANDRAIL_HOME; the first hook that reaches the store again records the outage as one
`gate` event of the run. Played with real `handrail gate` processes on a real store."""

from __future__ import annotations

import json
from pathlib import Path

from handrail.gate import outages
from tests.gate.runs import GateWorld, claude_input


def test_an_outage_is_allowed_with_a_warning_and_recorded_once_the_store_answers(world: GateWorld) -> None:
    run = world.start("plan")
    broken = world.root / "broken.db"
    broken.write_bytes(b"this is not a database" * 100)
    stop = claude_input(world, "Stop", stop_hook_active=False)
    during = world.gate("stop", stop, "--database", f"sqlite:///{broken}")
    assert during.exit_code == 0
    # that store holds no run and the gate never saw one there: allowed, with the reason
    said = during.json()["systemMessage"]
    assert f"the run database {broken} is damaged" in during.stderr and "allowing" in said
    unreachable = world.gate("stop", stop, "--server", "http://127.0.0.1:9")
    assert unreachable.exit_code == 0 and "cannot reach http://127.0.0.1:9" in unreachable.stderr
    spool = world.handrail_home / outages.NAME
    assert len(spool.read_text().splitlines()) == 2
    assert not [e for e in world.gate_events() if e["event"] == "outage"]

    after = world.gate("user-prompt-submit", claude_input(world, "UserPromptSubmit", prompt="go"))
    assert run in after.json()["hookSpecificOutput"]["additionalContext"]
    [outage] = [e for e in world.gate_events() if e["event"] == "outage"]
    assert outage["decision"] == "allow" and outage["count"] == 2
    assert "cannot reach http://127.0.0.1:9" in outage["reason"]
    assert not spool.exists()  # recorded once: the next hook records nothing more
    world.gate("user-prompt-submit", claude_input(world, "UserPromptSubmit", prompt="again"))
    assert len([e for e in world.gate_events() if e["event"] == "outage"]) == 1


def test_the_outage_note_keeps_only_the_newest_lines(tmp_path: Path) -> None:
    spool = tmp_path / outages.NAME
    for number in range(outages.MAX_LINES + 25):
        outages.keep("/work/shop", "stop", "allow", f"outage {number}", spool)
    lines = spool.read_text().splitlines()
    assert len(lines) == outages.MAX_LINES
    assert json.loads(lines[-1])["reason"] == f"outage {outages.MAX_LINES + 24}"
    assert json.loads(lines[0])["reason"] == "outage 25"


def test_a_servers_outage_note_waits_for_the_runs_of_the_person_it_was_answered_for(tmp_path: Path) -> None:
    spool = tmp_path / outages.NAME
    outages.keep("/srv/erin/project", "stop", "allow", "erin's store error", spool, owner="erin")
    outages.keep("/srv/erin/project/sub", "stop", "deny", "robot's store error", spool, owner="robot")
    # robot's run claims the whole machine as its workspace: it still gets only its own note
    data, rest = outages.pending("/", spool, owner="robot")
    assert data is not None and data["count"] == 1 and data["reason"] == "robot's store error"
    assert [json.loads(line)["owner"] for line in rest] == ["erin"]
    mine, _ = outages.pending("/srv/erin", spool, owner="erin")
    assert mine is not None and mine["reason"] == "erin's store error"
