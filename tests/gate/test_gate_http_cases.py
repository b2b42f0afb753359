"""Claude Code's golden cases (spec/cases/gate/claude-code/) answered by the HTTP hooks'
handler, on a real store, give what the command gives: 200 with its stdout (empty: no
decision) where it exits 0, 400 with its stderr line where it exits 1, and the same
`gate` event. The handler is the one `handrail serve` mounts at POST /hooks/claude-code
(tests/gate/test_gate_http.py drives it through a real server)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.gate.http_hooks import HookServer
from handrail.runs import Runs
from handrail.store import open_store
from tests.gate.runs import GateWorld
from tests.gate.test_gate_cases import CLAUDE, filled, put_run

# the command is installed for one event; an HTTP hook's body names its own. ConfigChange
# reads the settings files where Claude Code runs: the command's alone (over HTTP, a 400)
ONLY_THE_COMMAND = {
    "malformed-event-mismatch",
    # unreadable input is refused while a run is active by the command hook only: over
    # HTTP it is 400, which Claude Code reads as go on (spec/gate.md)
    "malformed-not-json-run-active",
    *(p.stem for p in CLAUDE if p.stem.startswith("config-change")),
}
QUERY = {"--require-run": "require-run", "--no-reminder": "reminder", "--driven-from": "driven-from"}


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GateWorld]:
    found = GateWorld(tmp_path)
    monkeypatch.setenv("HOME", str(found.home))
    monkeypatch.setenv("HANDRAIL_HOME", str(found.handrail_home))
    monkeypatch.delenv("HANDRAIL_WORKFLOWS", raising=False)
    yield found
    found.close()


def query_of(options: list[str]) -> dict[str, str]:
    query: dict[str, str] = {}
    words = iter(options)
    for word in words:
        query[QUERY[word]] = "off" if word == "--no-reminder" else next(words)
    return query


@pytest.mark.parametrize("path", [p for p in CLAUDE if p.stem not in ONLY_THE_COMMAND], ids=lambda p: p.stem)
def test_the_http_hook_answers_each_case_as_the_command_does(world: GateWorld, path: Path) -> None:
    case = json.loads(path.read_text("utf-8"))
    put_run(world, case["run"], case["stopRefusals"])
    before = len(world.gate_events()) if world.run_id else 0
    runs = Runs(lambda: open_store(world.url))
    try:
        server = HookServer(runs, world.url)
        status, body, _ = server.answer(
            "claude-code", filled(case["stdin"], world).encode(), query_of(case["options"]), None
        )
    finally:
        runs.close()
    expected = case["expected"]
    if expected["exitCode"] == 0:
        assert (status, body.decode()) == (200, filled(expected["stdout"], world))
    else:
        assert status == 400
        assert json.loads(body)["error"] == filled(expected["stderr"], world).strip()
    if "gateEvent" in expected:
        events = world.gate_events()
        assert len(events) == before + 1
        wanted = {key: filled(value, world) for key, value in expected["gateEvent"].items()}
        assert {key: events[-1].get(key) for key in wanted} == wanted
