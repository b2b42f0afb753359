"""`handrail drive --agents N` at a parallel loop: the run waits on its branches, and
up to N agent processes work them at once. Each agent claims a branch itself
(`workflow_claim`), so no two work one branch while its lease lives, and a branch an
agent left (killed, crashed, gave up) goes to the next agent once its lease ends.

Each branch has a git worktree of its own, on a git branch of its own, made before the
agents start, so parallel edits never meet in one folder; the prompt names them all,
and the agent works in the one of the branch it was given. The step after the loop is
told where each branch's work is (`fan_in`)."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from handrail.model.runs import RunRecord, RunStatus
from handrail.store.rows import now

POLL_SECONDS = 0.2


@dataclass(frozen=True, slots=True)
class Place:
    """Where one branch's work is."""

    index: int
    item: Any
    folder: str
    git_branch: str | None  # None: the workspace is no git repository, the branches share it


def places(workspace: str, parent: RunRecord, branches: list[RunRecord]) -> list[Place]:
    """A worktree per branch, on its own git branch (made once; kept after the run, for
    the fan-in step and the person to read), or the workspace itself outside git."""
    found = []
    repo = _git(workspace, "rev-parse", "--git-common-dir")
    for branch in sorted(branches, key=lambda b: b.branch or 0):
        index = branch.branch or 0
        scope = branch.position.get("branchOf")
        item = scope.get("item") if isinstance(scope, Mapping) else None
        if repo is None:
            found.append(Place(index, item, workspace, None))
            continue
        common = Path(workspace, repo).resolve()
        folder = common / "handrail-worktrees" / parent.id / f"branch-{index}"
        name = f"handrail/{parent.id}/branch-{index}"
        if not folder.exists():
            done = _git(workspace, "worktree", "add", "-q", "-B", name, str(folder), "HEAD")
            if done is None:
                found.append(Place(index, item, workspace, None))
                continue
        found.append(Place(index, item, str(folder), name))
    return found


def _git(cwd: str, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def prompt(parent: RunRecord, loop: str, where: list[Place]) -> str:
    lines = [
        f"handrail drives you through one branch of the parallel loop `{loop}` of run {parent.id} "
        f"(workflow {parent.workflow_id}).",
        f"Goal: {parent.goal}" if parent.goal else "",
        "",
        f'First call handrail\'s workflow_claim tool with runId "{parent.id}": it gives you one branch '
        "(its runId, branch index, item, step and a lease token), or says none is free; then stop.",
        "Work in the folder of your branch's index:",
        *(f"- branch {p.index}" + _item(p) + f": {p.folder}" for p in where),
        "Do the branch's steps; submit each yourself with workflow_continue, giving the branch's runId, "
        "the stepId, your output and the lease token as `lease`. Once the branch is complete, stop: "
        "other agents do the other branches.",
    ]
    return "\n".join(lines)


def _item(p: Place) -> str:
    return f" (item {p.item!r})" if p.item is not None else ""


def fan_in(loop: str, where: list[Place]) -> str:
    """What the step after the loop is told: where each branch's work is."""
    lines = [f"The branches of the parallel loop `{loop}` did their work here:"]
    for p in where:
        on = f", on git branch {p.git_branch}" if p.git_branch else ""
        lines.append(f"- branch {p.index}" + _item(p) + f": {p.folder}{on}")
    return "\n".join(lines)


Start = Callable[[str], Any]  # one agent process with this prompt, run to its end; what it reported


class Pool:
    """Up to `agents` processes at once while the parent waits on its branches."""

    def __init__(
        self,
        agents: int,
        most: int,
        read: Callable[[str], RunRecord],
        say: Callable[[str], None],
        crossed: Callable[[], str | None] = lambda: None,
    ):
        self.agents, self.most, self.read, self.say = agents, most, read, say
        self.crossed = crossed  # a budget crossed (--max-usd, --max-minutes): no agent starts then
        self.started = 0
        self.lock = threading.Lock()

    def work(
        self, parent_id: str, branches: Callable[[], list[RunRecord]], start: Start, text: str
    ) -> str | None:
        """Until the parent moves on: None; or why the driver stops (too many agents, or a
        budget crossed: the agents running then finish, none starts after)."""
        running: set[Future[Any]] = set()
        with ThreadPoolExecutor(max_workers=self.agents) as pool:
            while True:
                if not _waiting(self.read(parent_id)):
                    wait(running)
                    return None
                free = _claimable(branches())
                while len(running) < min(self.agents, free):
                    crossed = self.crossed()
                    if crossed:
                        wait(running)
                        return crossed
                    if self.started >= self.most:
                        wait(running)
                        return f"{self.started} agent processes did not finish the loop's branches"
                    self.started += 1
                    self.say(f"branch agent {self.started} started ({len(running) + 1} running)")
                    running.add(pool.submit(start, text))
                if running:
                    done, running = wait(running, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                    for future in done:
                        future.result()  # an error in the driver's own code is not swallowed
                else:  # every open branch is held: a lease ends, or its holder moves it
                    time.sleep(POLL_SECONDS)


def _waiting(run: RunRecord) -> bool:
    waiting = run.position.get("waitingOn") if isinstance(run.position, Mapping) else None
    return (
        run.status == RunStatus.ACTIVE and isinstance(waiting, Mapping) and waiting.get("kind") == "branches"
    )


def waiting_loop(run: RunRecord) -> str | None:
    """The parallel loop the run waits on, or None."""
    if not _waiting(run):
        return None
    return str(run.position["waitingOn"].get("stepId"))


def _claimable(branches: list[RunRecord]) -> int:
    at = now()
    return sum(
        1
        for b in branches
        if b.status == RunStatus.ACTIVE and (b.holder is None or (b.lease_until or "") <= at)
    )
