"""`handrail drive --agents 3` at a parallel loop of six items with the pinned Claude
Code as each branch's agent, the scripted model playing all of them at once: each
process claims a branch with workflow_claim, writes its item in the branch's own git
worktree with Claude Code's Write tool, under the gate's hooks, and submits the branch
with the claim's lease; the step after the loop is told where each branch's work is."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from handrail.store import open_store
from tests.drive.scripted_agent import TOOLS, first_user_text
from tests.drive.test_drive_claude_code import world  # noqa: F401  # the fixture
from tests.drive.world import DriveWorld
from tests.gate.real_harness.anthropic_model import Request, Turn, say, use

pytestmark = pytest.mark.slow
FAN = Path(__file__).with_name("fan.json")
ITEMS = ["a", "b", "c", "d", "e", "f"]
BRANCH_PROMPT = re.compile(r"parallel loop `(\w+)` of run (run_\w+)")
STEP_PROMPT = re.compile(r'runId "(run_\w+)", stepId "([\w-]+)"')


class BranchAgents:
    """One policy for every request: a branch agent claims, writes its item, submits;
    the gather step's agent submits what it was told."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.claimed: list[int] = []
        self.gathered = ""

    def answer(self, request: Request) -> Turn:
        first = first_user_text(request)
        turns = sum(1 for m in request.messages if m.get("role") == "assistant")
        if "Stop hook" in request.last_user_text():
            return say("Stopping.")
        branch = BRANCH_PROMPT.search(first)
        if branch is not None:
            return self._branch(request, first, branch.group(2), turns)
        step = STEP_PROMPT.search(first)
        if step is not None and turns == 0:
            self.gathered = first
            output = "Gathered the six branches' items."
            return use(TOOLS + "workflow_continue", runId=step.group(1), stepId=step.group(2), output=output)
        return say("Done.")

    def _branch(self, request: Request, prompt: str, parent: str, turns: int) -> Turn:
        if turns == 0:
            return use(TOOLS + "workflow_claim", runId=parent)
        claim = _claim_of(request)
        if claim is None or not claim.get("claimed"):
            return say("No branch is free: stopping.")
        index, item = claim["branch"], claim.get("item")
        if turns == 1:
            with self.lock:
                self.claimed.append(index)
            folder = re.search(rf"^- branch {index}\b.*: (\S+)$", prompt, re.MULTILINE)
            assert folder, prompt
            return use("Write", file_path=f"{folder.group(1)}/item.txt", content=f"{item}\n")
        if turns == 2:
            step: Any = claim["step"]
            lease: Any = claim["lease"]
            given = {"runId": claim["runId"], "stepId": step["id"], "lease": lease["token"]}
            return use(TOOLS + "workflow_continue", **given, output=f"Wrote item {item}.")
        return say(f"Branch {index} is complete.")


def _claim_of(request: Request) -> dict[str, Any] | None:
    """The workflow_claim result the conversation holds (the first tool result)."""
    for message in request.messages:
        if message.get("role") != "user" or not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                content = block.get("content")
                text = (
                    content
                    if isinstance(content, str)
                    else "".join(str(p.get("text", "")) for p in content or () if isinstance(p, dict))
                )
                try:
                    found = json.loads(text)
                except ValueError:
                    return None
                return found if isinstance(found, dict) else None
    return None


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def test_three_claude_code_processes_work_six_branches_each_in_its_worktree_under_the_gate(
    world: DriveWorld,  # noqa: F811
) -> None:
    world.add_workflow(json.loads(FAN.read_text()))
    agents = BranchAgents()
    world.model.play(*([agents.answer] * 400))
    report = world.root / "report.md"
    items = f"items={json.dumps(ITEMS)}"
    done = world.drive("fan", "--agents", "3", "--context", items, "--report", str(report), "--json")

    assert done.returncode == 0, done.stderr[-4000:]
    outcome = json.loads(done.stdout)
    run_id = outcome["runId"]
    assert outcome["status"] == "completed"
    assert sorted(agents.claimed) == list(range(6))  # each branch claimed once
    for index, item in enumerate(ITEMS):
        folder = world.repo / ".git" / "handrail-worktrees" / run_id / f"branch-{index}"
        assert (folder / "item.txt").read_text() == f"{item}\n"
        assert git(folder, "branch", "--show-current").strip() == f"handrail/{run_id}/branch-{index}"
    assert not (world.repo / "item.txt").exists()
    summary = report.read_text()
    for index in range(6):
        assert f"- branch {index} (item {ITEMS[index]!r}): " in agents.gathered
        assert f"- branch {index} (item {ITEMS[index]!r}): " in summary  # where its work is
    assert "(3 running)" in done.stderr and "(4 running)" not in done.stderr
    # each agent's edit was judged, and recorded, on the branch it claimed: its claim bound it
    store = open_store(world.url)
    try:
        for branch in store.list_runs(parent_id=run_id):
            edits = [
                e.data["action"]
                for e in store.events(branch.id)
                if e.type == "gate"
                and e.data.get("event") == "after-tool"
                and "edit:" in e.data.get("action", "")
            ]
            assert edits and all(f"/branch-{branch.branch}/" in a for a in edits), (branch.branch, edits)
    finally:
        store.close()
    usage = world.events(run_id, "usage")
    assert len([e for e in usage if e["stepId"] == "each"]) >= 6 and usage[-1]["stepId"] == "gather"
    assert all(e["reported"] and e["costUsd"] > 0 for e in usage)
