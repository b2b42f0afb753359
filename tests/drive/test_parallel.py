"""`handrail drive --agents N` at a parallel loop, with a stand-in agent that speaks MCP
(tests/drive/mcp_agent.py) in place of a harness: each agent claims a branch itself,
works it in the branch's own git worktree, and the step after the loop is told where
each branch's work is; an agent that dies holding a branch leaves it to the next
agent once its lease ends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from handrail.store import open_store
from tests.helpers.environment import child_env

pytestmark = pytest.mark.slow
HANDRAIL = Path(sys.executable).parent / "handrail"
AGENT = Path(__file__).with_name("mcp_agent.py")
FAN = Path(__file__).with_name("fan.json")
ITEMS = ["a", "b", "c", "d", "e", "f"]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout


def fan_world(tmp_path: Path, dies: bool = True) -> tuple[list[str], dict[str, str], Path, str]:
    """A fresh git repository, the `fan` workflow and the stand-in agent (`dies`: the
    first to claim a branch dies holding it): the drive's command line (without its
    own options), its environment, the agent's log, and the database."""
    repo, flows = tmp_path / "repo", tmp_path / "flows"
    repo.mkdir()
    flows.mkdir()
    (flows / FAN.name).write_text(FAN.read_text())
    git(repo, "init", "-q", "-b", "main")
    git(
        repo,
        "-c",
        "user.name=ana",
        "-c",
        "user.email=ana@example.com",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "first",
    )
    agent = tmp_path / "agent.sh"
    agent.write_text(f'#!/bin/sh\nexec {sys.executable} {AGENT} "$@"\n')
    agent.chmod(0o755)
    log = tmp_path / "agent.log"
    env = {**child_env(tmp_path), "DRIVE_AGENT_LOG": str(log)}
    if dies:
        env["DRIVE_AGENT_DIES"] = str(tmp_path / "died")
    database = "sqlite:///" + str(tmp_path / "runs.db").lstrip("/")
    argv = [str(HANDRAIL), "drive", "--no-bundled", "--workflows", str(flows), "--agent-command", str(agent)]
    argv += ["--workspace", str(repo), "--database", database, "--lease-seconds", "1", "--json"]
    return argv, env, log, database


def drive_fan(
    tmp_path: Path, *extra: str, dies: bool = True
) -> tuple[subprocess.CompletedProcess[str], Path, str]:
    """`handrail drive fan` over the six items: what it did, the agent's log, the database."""
    argv, env, log, database = fan_world(tmp_path, dies)
    argv += ["fan", "--context", f"items={json.dumps(ITEMS)}", *extra]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    return done, log, database


def test_six_branches_are_worked_by_three_agents_each_in_its_worktree_a_dead_agents_branch_by_another(
    tmp_path: Path,
) -> None:
    done, log, database = drive_fan(tmp_path, "--agents", "3")
    repo = tmp_path / "repo"

    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["status"] == "completed"
    lines = log.read_text().splitlines()
    died = int((tmp_path / "died").read_text())
    assert f"died holding branch {died}" in lines
    worked = sorted(line for line in lines if line.startswith("did branch"))
    assert len(worked) == 6  # the dead agent's branch too, by another agent once its lease ended
    folders = {}
    for line in worked:
        index, folder = line.removeprefix("did branch ").split(" in ")
        folders[int(index)] = Path(folder)
    assert sorted(folders) == list(range(6)) and len(set(folders.values())) == 6
    run_id = outcome["runId"]
    for index, folder in folders.items():
        assert (folder / "item.txt").read_text() == ITEMS[index]
        assert git(folder, "branch", "--show-current").strip() == f"handrail/{run_id}/branch-{index}"
    assert not (repo / "item.txt").exists()  # the workspace itself is left alone
    # the step after the loop was told where each branch's work is
    (gather,) = [json.loads(line.split(": ", 1)[1]) for line in lines if line.startswith("step gather")]
    for index, folder in folders.items():
        on = f"on git branch handrail/{run_id}/branch-{index}"
        assert f"- branch {index} (item {ITEMS[index]!r}): {folder}, {on}" in gather
    # each agent process spent, recorded on the run at the loop: at least 7 at the loop (one died)
    store = open_store(database)
    try:
        usage = [e for e in store.events(run_id) if e.type == "usage"]
    finally:
        store.close()
    at_loop = [e for e in usage if e.step_id == "each"]
    assert len(at_loop) >= 7 and [e.step_id for e in usage][-1] == "gather"
    assert "up to 3 agents at once" in done.stderr and "(3 running)" in done.stderr
    assert "(4 running)" not in done.stderr


def test_a_budget_crossed_at_a_parallel_loop_starts_no_more_agents(tmp_path: Path) -> None:
    # each stand-in agent reports $0.01: the budget is crossed once two have finished
    done, _, database = drive_fan(tmp_path, "--agents", "2", "--max-usd", "0.015", dies=False)

    assert done.returncode == 1, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["reason"].startswith("the budget of $0.015 is crossed"), outcome
    store = open_store(database)
    try:
        usage = [e for e in store.events(outcome["runId"]) if e.type == "usage"]
    finally:
        store.close()
    assert 2 <= len(usage) <= 3  # those running when it was crossed finished; none started after
    assert any(e.data.get("stopped", "").startswith("the budget") for e in usage)


def test_the_driver_killed_mid_loop_is_resumed_with_every_worktree_kept_and_no_branch_done_twice(
    tmp_path: Path,
) -> None:
    argv, env, log, database = fan_world(tmp_path, dies=False)
    process = subprocess.Popen(
        [*argv, "fan", "--agents", "1", "--context", f"items={json.dumps(ITEMS)}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # two branches done: kill the driver, and its agent with it
            if log.exists() and log.read_text().count("did branch") >= 2:
                break
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        process.wait(10)
    store = open_store(database)
    try:
        (run,) = [r for r in store.list_runs() if r.parent_id is None]
    finally:
        store.close()
    resumed = subprocess.run(
        [*argv, "--resume", run.id, "--agents", "2"], env=env, capture_output=True, text=True, timeout=120
    )

    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["status"] == "completed"
    store = open_store(database)
    try:
        branches = store.list_runs(parent_id=run.id)
        assert sorted(b.branch for b in branches) == list(range(6)) and {str(b.status) for b in branches} == {
            "completed"
        }
        for branch in branches:  # each branch's step accepted once, across both drives
            accepted = [e for e in store.events(branch.id) if e.type == "accepted"]
            assert len(accepted) == 1, branch.branch
        parent_accepted = [e.step_id for e in store.events(run.id) if e.type == "accepted"]
        assert parent_accepted == ["each", "gather"]
    finally:
        store.close()
    for index, item in enumerate(ITEMS):  # the worktrees of the first drive are all still there
        folder = tmp_path / "repo" / ".git" / "handrail-worktrees" / run.id / f"branch-{index}"
        assert (folder / "item.txt").read_text() == item
