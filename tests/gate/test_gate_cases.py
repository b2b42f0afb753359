"""The golden cases of spec/cases/gate/: each harness's documented hook input, run
through a real `handrail gate` process against a real run store, must give exactly
the documented stdout, stderr and exit code, and write the `gate` event it names."""

from __future__ import annotations

import importlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from handrail.runs import gate_store
from handrail.store import open_store
from tests.gate.runs import ROOT, GateWorld

CASES = ROOT / "spec" / "cases" / "gate"
CLAUDE = sorted((CASES / "claude-code").glob("*.json"))
GIT = sorted((CASES / "git").glob("*.json"))
JSON_HARNESSES = ("cursor", "gemini", "codex")
OTHERS = [path for harness in JSON_HARNESSES for path in sorted((CASES / harness).glob("*.json"))]


def put_run(world: GateWorld, state: str, refusals: int) -> None:
    """The fixture's run in `state`: at a step, waiting on a person, completed, or none."""
    if state == "none":
        return
    if state == "release-waiting":
        world.start("release")
        world.complete("release")
    elif state == "completed":
        world.start("release")
        world.complete("release")
        world.approve()
    else:
        world.start(state)
    store = open_store(world.url)
    try:
        for _ in range(refusals):
            run = store.get(world.run_id or "")
            assert run is not None
            gate_store.record(store, run, state, {"event": "stop", "decision": "block"})
    finally:
        store.close()


def record_compaction(world: GateWorld, step: str) -> None:
    """The harness compacted the conversation at `step` (as its PreCompress hook records it)."""
    store = open_store(world.url)
    try:
        run = store.get(world.run_id or "")
        assert run is not None
        gate_store.record(store, run, step, {"event": "compact", "decision": "record", "source": "auto"})
    finally:
        store.close()


def filled(text: str, world: GateWorld) -> str:
    return (
        text.replace("${WORKSPACE}", str(world.workspace))
        .replace("${HANDRAIL_HOME}", str(world.handrail_home))
        .replace("${RUN}", world.run_id or "${RUN}")
    )


def check_case(world: GateWorld, case: dict[str, Any], *args: str) -> None:
    put_run(world, case["run"], case["stopRefusals"])
    if case.get("compacted"):
        record_compaction(world, case["run"])
    for name, content in case.get("files", {}).items():
        path = Path(filled(name, world))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    before = len(world.gate_events()) if world.run_id else 0
    ran = world.gate(case["event"], filled(case["stdin"], world), *args, *case["options"])
    expected = case["expected"]
    assert (ran.exit_code, ran.stdout, ran.stderr) == (
        expected["exitCode"],
        filled(expected["stdout"], world),
        filled(expected["stderr"], world),
    )
    if "gateEvent" in expected:
        events = world.gate_events()
        assert len(events) == before + 1
        wanted = {key: filled(value, world) for key, value in expected["gateEvent"].items()}
        assert {key: events[-1].get(key) for key in wanted} == wanted


@pytest.mark.parametrize("path", CLAUDE, ids=lambda p: p.stem)
def test_claude_code_case_gives_the_documented_answer(world: GateWorld, path: Path) -> None:
    case = json.loads(path.read_text("utf-8"))
    check_case(world, case, "--harness", "claude-code")


@pytest.mark.parametrize("path", GIT, ids=lambda p: p.stem)
def test_git_hook_case_gives_the_documented_answer(world: GateWorld, path: Path) -> None:
    case = json.loads(path.read_text("utf-8"))
    subprocess.run(["git", "init", "-q", str(world.workspace)], check=True)
    (world.workspace / ".git" / "COMMIT_EDITMSG").write_text("wip\n")
    check_case(world, case, *case["args"], "--harness", "git")


def test_every_claude_code_event_has_a_case() -> None:
    from handrail.gate.claude_code import EVENTS

    covered = {json.loads(p.read_text("utf-8"))["event"] for p in CLAUDE}
    assert covered == set(EVENTS)


@pytest.mark.parametrize("path", OTHERS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_cursor_gemini_and_codex_cases_give_the_documented_answer(world: GateWorld, path: Path) -> None:
    case = json.loads(path.read_text("utf-8"))
    check_case(world, case, "--harness", path.parent.name)


@pytest.mark.parametrize("harness", JSON_HARNESSES)
def test_every_event_of_each_harness_has_a_case_and_a_command(harness: str) -> None:
    from handrail.gate import hook_options

    adapter = importlib.import_module(f"handrail.gate.{harness}")
    covered = {json.loads(p.read_text("utf-8"))["event"] for p in (CASES / harness).glob("*.json")}
    assert covered == set(adapter.EVENTS)
    assert set(adapter.EVENTS) <= set(hook_options.HOOK_EVENTS)
