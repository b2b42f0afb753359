"""A run is bound to the first harness session the gate sees on it: a second session in
the same workspace neither finds a newer run in its place nor takes the run's stop
refusals, until it carries the run on itself with the run tools. Played through real
`handrail gate` processes on a real store."""

from __future__ import annotations

from handrail.model.request import LOCAL
from tests.gate.runs import GateWorld, claude_input


def stop(world: GateWorld, session: str) -> str:
    ran = world.gate("stop", claude_input(world, "Stop", session_id=session, stop_hook_active=False))
    assert ran.exit_code == 0, ran.stderr
    return ran.json()["reason"] if ran.stdout else ""


def test_a_second_session_does_not_take_the_runs_stop_refusals(world: GateWorld) -> None:
    run = world.start("plan")
    world.gate("session-start", claude_input(world, "SessionStart", session_id="ana-1", source="startup"))

    assert "refused 1 of 3" in stop(world, "ana-1")
    assert stop(world, "side-chat") == ""  # not the run's session: its stop is not held back
    world.gate(
        "user-prompt-submit", claude_input(world, "UserPromptSubmit", session_id="side-chat", prompt="?")
    )
    assert "refused 2 of 3" in stop(world, "ana-1")  # the other session's prompt did not reset the count

    told = world.gate(
        "session-start", claude_input(world, "SessionStart", session_id="side-chat", source="startup")
    )
    context = told.json()["hookSpecificOutput"]["additionalContext"]
    assert f"Active handrail run {run}" in context and "bound to another session (ana-1)" in context
    edit = {"file_path": str(world.workspace / "src" / "cart.py"), "content": "x"}
    denied = world.gate(
        "pre-tool-use",
        claude_input(world, "PreToolUse", session_id="side-chat", tool_name="Write", tool_input=edit),
    ).json()
    assert denied["hookSpecificOutput"]["permissionDecision"] == "deny"  # the workspace is still held

    decisions = [(e.get("session"), e["decision"]) for e in world.gate_events() if e["event"] == "stop"]
    assert ("side-chat", "allow:other-session") in decisions


def test_a_session_takes_the_run_over_by_calling_its_run_tools(world: GateWorld) -> None:
    run = world.start("plan")
    assert "refused 1 of 3" in stop(world, "ana-1")
    resume = claude_input(
        world,
        "PreToolUse",
        session_id="ana-2",
        tool_name="mcp__handrail__workflow_resume",
        tool_input={"runId": run},
    )
    assert world.gate("pre-tool-use", resume).stdout == ""
    assert "refused 1 of 3" in stop(world, "ana-2")
    assert stop(world, "ana-1") == ""


def test_each_session_keeps_its_own_run_when_a_newer_one_starts_in_the_workspace(world: GateWorld) -> None:
    # a fresh session is held to both open runs until it names one (issue 34, row 11)
    first = world.start("plan")
    world.gate("session-start", claude_input(world, "SessionStart", session_id="ana-1", source="startup"))
    second = world.runs.start(
        LOCAL, world.snapshot().get("gate-fixture"), "Another change", str(world.workspace), {}
    )["runId"]

    mine = world.gate(
        "user-prompt-submit", claude_input(world, "UserPromptSubmit", session_id="ana-1", prompt="go")
    )
    assert first in mine.json()["hookSpecificOutput"]["additionalContext"]
    theirs = world.gate(
        "user-prompt-submit", claude_input(world, "UserPromptSubmit", session_id="bo-1", prompt="go")
    )
    held = theirs.json()["hookSpecificOutput"]["additionalContext"]
    assert first in held and second in held and "held to the rules of every open run" in held
    resume = claude_input(
        world,
        "PreToolUse",
        session_id="bo-1",
        tool_name="mcp__handrail__workflow_resume",
        tool_input={"runId": second},
    )
    assert world.gate("pre-tool-use", resume).stdout == ""
    theirs = world.gate(
        "user-prompt-submit", claude_input(world, "UserPromptSubmit", session_id="bo-1", prompt="go")
    )
    assert second in theirs.json()["hookSpecificOutput"]["additionalContext"]
    assert first not in theirs.json()["hookSpecificOutput"]["additionalContext"]
    assert (
        first
        in world.gate(
            "user-prompt-submit", claude_input(world, "UserPromptSubmit", session_id="ana-1", prompt="again")
        ).stdout
    )


def test_a_session_handrail_drive_starts_for_a_step_takes_the_run_at_its_start(world: GateWorld) -> None:
    # Codex runs no PreToolUse for MCP calls: a driven session binds the run when it starts
    world.start("plan")
    driven = ("--driven-from", "0", "--stop-limit", "1")
    first = claude_input(world, "SessionStart", session_id="step-1", source="startup")
    world.gate("session-start", first, *driven)
    assert "refused 1 of 1" in stop_driven(world, "step-1", driven)
    second = claude_input(world, "SessionStart", session_id="step-2", source="startup")
    told = world.gate("session-start", second, *driven).json()["hookSpecificOutput"]["additionalContext"]
    assert "bound to another session" not in told
    assert "refused 1 of 1" in stop_driven(world, "step-2", driven)  # its stops are the ones held
    assert stop_driven(world, "step-1", driven) == ""  # the last step's session holds it no more
    # a session without --driven-from still takes it only through the run tools
    world.gate("session-start", claude_input(world, "SessionStart", session_id="side", source="startup"))
    assert stop(world, "side") == ""
    assert [e["session"] for e in world.gate_events() if e.get("bind")] == ["step-1", "step-2"]


def stop_driven(world: GateWorld, session: str, driven: tuple[str, ...]) -> str:
    asked = claude_input(world, "Stop", session_id=session, stop_hook_active=False)
    ran = world.gate("stop", asked, *driven)
    assert ran.exit_code == 0, ran.stderr
    return ran.json()["reason"] if ran.stdout else ""
