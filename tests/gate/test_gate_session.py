"""A scripted session against real processes: a real `handrail start` (MCP over stdio)
and its SQLite store, `handrail gate` processes fed the event sequence Claude Code
would send, and git's hooks (installed by `handrail gate install git`) in a real
repository with a real remote."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from handrail.model.request import LOCAL
from tests.gate.runs import GateWorld, claude_input, started_over_mcp
from tests.helpers.server import Server


def git(world: GateWorld, *args: str) -> subprocess.CompletedProcess[str]:
    env = world.env()
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.update(
        GIT_AUTHOR_NAME="ana", GIT_AUTHOR_EMAIL="a@x", GIT_COMMITTER_NAME="ana", GIT_COMMITTER_EMAIL="a@x"
    )
    return subprocess.run(
        ["git", *args], cwd=world.workspace, env=env, capture_output=True, text=True, timeout=60
    )


def handrail(world: GateWorld, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handrail", *args],
        cwd=world.workspace,
        env=world.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def head(world: GateWorld) -> str:
    return git(world, "rev-parse", "HEAD").stdout.strip()


@pytest.mark.slow  # a real server, a process per hook; the quick loop keeps the claude-code and git cases
def test_a_session_played_as_claude_code_and_git_is_held_to_the_run(world: GateWorld) -> None:
    remote = world.root / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(world, "init", "-q", "-b", "main")
    (world.workspace / "README.md").write_text("shop\n")
    git(world, "add", "-A")
    assert git(world, "commit", "-q", "-m", "first").returncode == 0
    git(world, "remote", "add", "origin", str(remote))
    installed = handrail(world, "gate", "install", "git")
    assert installed.returncode == 0, installed.stderr
    assert "pre-commit" in installed.stdout

    server = Server("--no-bundled", "--workflows", str(world.workflows), "--database", world.url)
    try:
        server.initialize()
        run = started_over_mcp(world, server)

        # a new session learns where the run stands
        started = world.gate("session-start", claude_input(world, "SessionStart", source="startup")).json()
        context = started["hookSpecificOutput"]["additionalContext"]
        assert f"Active handrail run {run}" in context and "Current step 1 of 4: plan" in context

        reminded = world.gate(
            "user-prompt-submit", claude_input(world, "UserPromptSubmit", prompt="go")
        ).json()
        assert (
            reminded["hookSpecificOutput"]["additionalContext"]
            == f"handrail: run {run} is at step 'plan' (1 of 4)."
        )

        # an edit during the plan step is denied; the plan file is not
        edit = {"file_path": str(world.workspace / "src" / "cart.py"), "old_string": "a", "new_string": "b"}
        denied = world.gate(
            "pre-tool-use", claude_input(world, "PreToolUse", tool_name="Edit", tool_input=edit)
        )
        assert denied.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert "step 'plan'" in denied.json()["hookSpecificOutput"]["permissionDecisionReason"]
        plan = {"file_path": str(world.workspace / "docs" / "plan.md"), "content": "# Plan"}
        assert (
            world.gate(
                "pre-tool-use", claude_input(world, "PreToolUse", tool_name="Write", tool_input=plan)
            ).stdout
            == ""
        )

        # a commit before the tests step: denied by git's hook, HEAD unchanged
        (world.workspace / "docs").mkdir()
        (world.workspace / "docs" / "plan.md").write_text("# Plan\n")
        git(world, "add", "-A")
        before = head(world)
        refused = git(world, "commit", "-m", "plan")
        assert refused.returncode != 0
        assert "does not allow shell:git commit" in refused.stderr
        assert head(world) == before

        # stopping while the step is not done is refused, naming the step
        stop = world.gate("stop", claude_input(world, "Stop", stop_hook_active=False)).json()
        assert stop["decision"] == "block" and "step 'plan' (1 of 4)" in stop["reason"]

        # the step completed over MCP: the run moves to `implement`
        done = server.call(
            "workflow_continue", {"runId": run, "stepId": "plan", "output": "The plan is in docs/plan.md."}
        )
        assert done["structuredContent"]["step"]["id"] == "implement"

        # in `implement`, a commit through the agent's shell is denied with the rule's message
        bash = {"command": "git add -A && git commit -m wip"}
        commit = world.gate(
            "pre-tool-use", claude_input(world, "PreToolUse", tool_name="Bash", tool_input=bash)
        ).json()
        assert "commit after the tests step" in commit["hookSpecificOutput"]["permissionDecisionReason"]

        # after compaction the context names the run, the step and the next call
        compacted = world.gate("session-start", claude_input(world, "SessionStart", source="compact")).json()
        context = compacted["hookSpecificOutput"]["additionalContext"]
        assert (
            run in context
            and "Current step 2 of 4: implement" in context
            and "Accepted steps: plan." in context
        )
        assert f'Next call: workflow_continue with runId "{run}", stepId "implement"' in context

        for step in ("implement", "test"):
            server.call(
                "workflow_continue", {"runId": run, "stepId": step, "output": f"{step}: done and shown."}
            )

        # after the tests step the commit goes through; the push waits for the release's approval
        assert git(world, "commit", "-q", "-m", "plan").returncode == 0
        server.call(
            "workflow_continue", {"runId": run, "stepId": "release", "output": "Release 1.1: discounts."}
        )
        pushed = git(world, "push", "-q", "origin", "main")
        assert pushed.returncode != 0 and "push after the release is approved" in pushed.stderr
        assert (
            world.gate("stop", claude_input(world, "Stop", stop_hook_active=False)).stdout == ""
        )  # waits on a person

        # the agent may not approve for the person; the person does
        approve = {"command": f"handrail runs approve {run}"}
        own = world.gate(
            "pre-tool-use", claude_input(world, "PreToolUse", tool_name="Bash", tool_input=approve)
        ).json()
        assert "only a person approves" in own["hookSpecificOutput"]["permissionDecisionReason"]
        # nor move its run to a version of its own making
        migrate = {"command": f"handrail runs migrate {run} --to 9.0.0 --workflows ./mine"}
        moved = world.gate(
            "pre-tool-use", claude_input(world, "PreToolUse", tool_name="Bash", tool_input=migrate)
        ).json()
        assert "only a person moves a run" in moved["hookSpecificOutput"]["permissionDecisionReason"]
        refused = handrail(world, "runs", "approve", run, "--database", world.url, "--as", "ana")
        assert refused.returncode == 1 and "passkey" in refused.stderr, refused.stderr  # the gate watches it
        world.approve_as_person(run)

        # the run completed: push and stop are allowed
        assert git(world, "push", "-q", "origin", "main").returncode == 0
        assert world.gate("stop", claude_input(world, "Stop", stop_hook_active=False)).stdout == ""
    finally:
        server.close()

    shown = handrail(world, "runs", "show", run, "--database", world.url, "--format", "json")
    gate_events = [e for e in json.loads(shown.stdout)["events"] if e["type"] == "gate"]
    decisions = [(e["event"], e["decision"]) for e in gate_events]
    assert ("before-tool", "deny") in decisions and ("stop", "block") in decisions
    assert ("session", "context") in decisions
    assert any(e.get("action") == "shell:git commit" for e in gate_events)  # the git hook's refusal


@pytest.mark.parametrize(
    ("workflow", "step", "tool", "tool_input", "said"),
    [
        (
            "coding-task",
            "understand",
            "Edit",
            {"file_path": "src/cart.py"},
            "edits start with the implementation",
        ),
        ("coding-task", "understand", "Bash", {"command": "git commit -am wip"}, "commit in the verify step"),
        (
            "refactoring",
            "define-goal",
            "Write",
            {"file_path": "src/cart.py"},
            "the code changes in the steps",
        ),
        ("release-checklist", "choose-version", "Bash", {"command": "git push --tags"}, "approved the tag"),
    ],
)
def test_the_bundled_workflows_hold_the_agent_where_it_matters(
    world: GateWorld, workflow: str, step: str, tool: str, tool_input: dict[str, str], said: str
) -> None:
    from handrail.catalog import load_catalog

    bundled = load_catalog(bundled=True).snapshot().get(workflow)
    started = world.runs.start(LOCAL, bundled, "Add a discount to the cart", str(world.workspace), {})
    world.run_id = started["runId"]
    ran = world.gate("pre-tool-use", claude_input(world, "PreToolUse", tool_name=tool, tool_input=tool_input))
    reason = ran.json()["hookSpecificOutput"]["permissionDecisionReason"]
    assert f"step '{step}' (1 of " in reason and said in reason
