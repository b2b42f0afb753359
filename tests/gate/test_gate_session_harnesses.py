"""Scripted Gemini CLI and Codex sessions against real processes: a real `handrail
start` (MCP over stdio) and its SQLite store, the hooks `handrail gate install gemini`
(or `codex`) wrote into the harness's settings, each run as the harness runs it (a
shell command, the event's JSON on stdin) in the order the harness sends them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.gate.runs import GateWorld, started_over_mcp
from tests.gate.test_gate_session import handrail
from tests.helpers.server import Server


class Harness:
    """Runs the installed hook of an event with the harness's input for it."""

    def __init__(self, world: GateWorld, settings_file: str, **common: Any) -> None:
        self.world = world
        self.common = common
        settings = json.loads((world.workspace / settings_file).read_text())
        self.commands = {
            event: group["hooks"][0]["command"]
            for event, groups in settings["hooks"].items()
            for group in groups
            if "handrail" in group["hooks"][0]["command"]
        }

    def __call__(self, event: str, **fields: Any) -> dict[str, Any]:
        body = {"cwd": str(self.world.workspace), "hook_event_name": event, **self.common, **fields}
        env = self.world.env()
        env["GEMINI_PROJECT_DIR"] = str(self.world.workspace)
        ran = subprocess.run(
            ["sh", "-c", self.commands[event]],
            input=json.dumps(body),
            cwd=self.world.workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert ran.returncode == 0, ran.stderr
        answer: dict[str, Any] = json.loads(ran.stdout or "{}")  # Codex allows in silence
        return answer


def install(world: GateWorld, harness: str) -> None:
    env = world.env()
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    installed = subprocess.run(
        [sys.executable, "-m", "handrail", "gate", "install", harness],
        cwd=world.workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert installed.returncode == 0, installed.stderr


@pytest.mark.slow  # a real server, a process per hook; the quick loop keeps each gemini case
def test_a_session_played_as_gemini_cli_is_held_to_the_run(world: GateWorld) -> None:
    install(world, "gemini")
    gemini = Harness(
        world,
        ".gemini/settings.json",
        session_id="g-1",
        transcript_path=str(world.root / "chat.json"),
        timestamp="2026-05-02T10:00:00Z",
    )

    server = Server("--no-bundled", "--workflows", str(world.workflows), "--database", world.url)
    try:
        server.initialize()
        run = started_over_mcp(world, server)

        # the session starts and learns where the run stands; each prompt is reminded
        context = gemini("SessionStart", source="startup")["hookSpecificOutput"]["additionalContext"]
        assert f"Active handrail run {run}" in context and "Current step 1 of 4: plan" in context
        reminded = gemini("BeforeAgent", prompt="add the discount")
        assert (
            reminded["hookSpecificOutput"]["additionalContext"]
            == f"handrail: run {run} is at step 'plan' (1 of 4)."
        )

        # an edit during the plan step is denied; the plan itself is not
        edit = gemini("BeforeTool", tool_name="replace", tool_input={"file_path": "src/cart.py"})
        assert edit["decision"] == "deny" and "does not allow edit:src/cart.py" in edit["reason"]
        assert gemini("BeforeTool", tool_name="write_file", tool_input={"file_path": "docs/plan.md"}) == {}

        # a commit before the tests step is denied
        commit = gemini(
            "BeforeTool", tool_name="run_shell_command", tool_input={"command": "git commit -m plan"}
        )
        assert commit["decision"] == "deny" and "shell:git commit -m plan" in commit["reason"]

        # stopping while the step is not done is refused, naming the step and the call
        stop = gemini("AfterAgent", prompt="go", prompt_response="Done!", stop_hook_active=False)
        assert stop["decision"] == "deny" and "step 'plan' (1 of 4)" in stop["reason"]
        assert "workflow_continue" in stop["reason"]
        # Gemini CLI sends the refusal back as a prompt: it is not a person's, and the count goes on
        assert gemini("BeforeAgent", prompt=stop["reason"]) == {}
        again = gemini("AfterAgent", prompt=stop["reason"], prompt_response="Done!", stop_hook_active=True)
        assert "stopping is refused 2 of 3 times" in again["reason"]

        # the step completed over MCP; the tool call itself is never refused
        continue_call = {"runId": run, "stepId": "plan", "output": "The plan is in docs/plan.md."}
        assert (
            gemini("BeforeTool", tool_name="mcp__handrail__workflow_continue", tool_input=continue_call) == {}
        )
        done = server.call("workflow_continue", continue_call)
        assert done["structuredContent"]["step"]["id"] == "implement"
        commit = gemini(
            "BeforeTool", tool_name="run_shell_command", tool_input={"command": "git commit -am wip"}
        )
        assert "commit after the tests step" in commit["reason"]

        # Gemini CLI compresses the conversation and adds no context after: the next prompt
        # gets the run's whole context, the one after that the one-line reminder again
        assert gemini("PreCompress", trigger="auto") == {}
        compressed = gemini("BeforeAgent", prompt="go on")["hookSpecificOutput"]["additionalContext"]
        assert "Current step 2 of 4: implement" in compressed and "Accepted steps: plan." in compressed
        assert f'Next call: workflow_continue with runId "{run}", stepId "implement"' in compressed
        after = gemini("BeforeAgent", prompt="and then")["hookSpecificOutput"]["additionalContext"]
        assert after == f"handrail: run {run} is at step 'implement' (2 of 4)."

        # a cleared session is told the run again
        cleared = gemini("SessionStart", source="clear")["hookSpecificOutput"]["additionalContext"]
        assert "Current step 2 of 4: implement" in cleared and "Accepted steps: plan." in cleared
        assert f'Next call: workflow_continue with runId "{run}", stepId "implement"' in cleared

        for step in ("implement", "test", "release"):
            server.call(
                "workflow_continue", {"runId": run, "stepId": step, "output": f"{step}: done and shown."}
            )
        refused = handrail(world, "runs", "approve", run, "--database", world.url, "--as", "ana")
        assert refused.returncode == 1 and "passkey" in refused.stderr, refused.stderr  # the gate watches it
        world.approve_as_person(run)

        # the run completed: the agent may stop
        assert gemini("AfterAgent", prompt="go", prompt_response="Done!", stop_hook_active=False) == {}
    finally:
        server.close()

    shown = handrail(world, "runs", "show", run, "--database", world.url, "--format", "json")
    decisions = [
        (e["event"], e["decision"]) for e in json.loads(shown.stdout)["events"] if e["type"] == "gate"
    ]
    assert ("before-tool", "deny") in decisions and ("stop", "block") in decisions
    assert ("session", "context") in decisions


def patch(*paths: str) -> dict[str, str]:
    body = "".join(f"*** Update File: {path}\n@@\n-a\n+b\n" for path in paths)
    return {"command": f"*** Begin Patch\n{body}*** End Patch\n"}


@pytest.mark.slow  # a real server, a process per hook; the quick loop keeps each codex case
def test_a_session_played_as_codex_is_held_to_the_run(world: GateWorld) -> None:
    install(world, "codex")
    codex = Harness(world, ".codex/hooks.json", session_id="019a-c0de", model="gpt-5-codex", turn_id="t-1")

    server = Server("--no-bundled", "--workflows", str(world.workflows), "--database", world.url)
    try:
        server.initialize()
        run = started_over_mcp(world, server)

        context = codex("SessionStart", source="startup")["hookSpecificOutput"]["additionalContext"]
        assert f"Active handrail run {run}" in context and "Current step 1 of 4: plan" in context
        reminded = codex("UserPromptSubmit", prompt="add the discount")["hookSpecificOutput"]
        assert reminded["additionalContext"] == f"handrail: run {run} is at step 'plan' (1 of 4)."

        # a patch during the plan step is denied for the file it may not touch
        edit = codex("PreToolUse", tool_name="apply_patch", tool_input=patch("docs/plan.md", "src/cart.py"))
        reason = edit["hookSpecificOutput"]["permissionDecisionReason"]
        assert edit["hookSpecificOutput"]["permissionDecision"] == "deny" and "edit:src/cart.py" in reason
        assert codex("PreToolUse", tool_name="apply_patch", tool_input=patch("docs/plan.md")) == {}

        commit = codex("PreToolUse", tool_name="Bash", tool_input={"command": "git commit -m plan"})
        assert commit["hookSpecificOutput"]["permissionDecision"] == "deny"

        stop = codex("Stop", stop_hook_active=False, last_assistant_message="Done!")
        assert stop["decision"] == "block" and "step 'plan' (1 of 4)" in stop["reason"]

        done = server.call(
            "workflow_continue", {"runId": run, "stepId": "plan", "output": "The plan is written."}
        )
        assert done["structuredContent"]["step"]["id"] == "implement"
        commit = codex("PreToolUse", tool_name="Bash", tool_input={"command": "git commit -am wip"})
        assert "commit after the tests step" in commit["hookSpecificOutput"]["permissionDecisionReason"]
        resumed = codex("SessionStart", source="resume")["hookSpecificOutput"]["additionalContext"]
        assert f'Next call: workflow_continue with runId "{run}", stepId "implement"' in resumed
        # Codex starts the session again after compacting it (source compact): the same context
        compacted = codex("SessionStart", source="compact")["hookSpecificOutput"]["additionalContext"]
        assert compacted == resumed

        for step in ("implement", "test", "release"):
            server.call(
                "workflow_continue", {"runId": run, "stepId": step, "output": f"{step}: done and shown."}
            )
        refused = handrail(world, "runs", "approve", run, "--database", world.url, "--as", "ana")
        assert refused.returncode == 1 and "passkey" in refused.stderr, refused.stderr  # the gate watches it
        world.approve_as_person(run)
        assert codex("Stop", stop_hook_active=False, last_assistant_message="Done!") == {}
    finally:
        server.close()

    shown = handrail(world, "runs", "show", run, "--database", world.url, "--format", "json")
    gate_events = [e for e in json.loads(shown.stdout)["events"] if e["type"] == "gate"]
    assert any(e.get("action") == "edit:src/cart.py" and e["decision"] == "deny" for e in gate_events)
    assert ("stop", "block") in [(e["event"], e["decision"]) for e in gate_events]
