"""Git checks, through the `git` program (no shell, a time limit per call).

A run records a baseline when it starts (`git_baseline`: HEAD, or that there are no
commits, or that the workspace is not a repository). `changes` compares the working
tree (committed, staged, unstaged and untracked files) with that baseline; `clean`
holds when nothing differs from HEAD and nothing is untracked. Ignored files never
count. Only the workspace's part of a repository is looked at. git never reads the
repository's configuration where it could run a program (see checks/git_view.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from handrail.checks.git_view import GitError, Repository, locate, run_git, sealed
from handrail.checks.processes import Finished
from handrail.model.workflow import GitCheck, Glob

BaselineState = Literal["commit", "no-commits", "not-a-repository", "unavailable"]


@dataclass(frozen=True, slots=True)
class Baseline:
    state: BaselineState
    head: str | None = None  # the commit, when state is "commit"
    detail: str = ""  # why, when git could not tell

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"state": self.state}
        if self.head is not None:
            wire["head"] = self.head
        if self.detail:
            wire["detail"] = self.detail
        return wire

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> Baseline:
        state = wire.get("state")
        if state not in ("commit", "no-commits", "not-a-repository", "unavailable"):
            raise ValueError(f"not a git baseline state: {state!r}")
        return cls(state, wire.get("head"), str(wire.get("detail", "")))


def git_baseline(workspace: str, timeout: float = 30.0) -> Baseline:
    """Where the workspace stands at the start of a run."""
    try:
        repo = locate(workspace, timeout)
        if repo is None:
            return Baseline("not-a-repository")
        with sealed(repo, workspace, timeout, repo.head) as folder:
            head = _commit(View(workspace, folder, repo.top, timeout), repo)
    except GitError as exc:
        return Baseline("unavailable", detail=str(exc))
    except OSError as exc:
        return Baseline("unavailable", detail=f"git cannot be asked: {exc.strerror or exc}")
    return Baseline("commit", head) if head else Baseline("no-commits")


def _commit(view: View, repo: Repository) -> str | None:
    """The commit HEAD names, when it names one."""
    if repo.head is None:
        return None
    done = view.git(["rev-parse", "--verify", "--quiet", f"{repo.head}^{{commit}}"])
    return done.output.decode("ascii", "replace").strip() if done.exit_code == 0 else None


def untracked(view: View) -> list[str]:
    """Untracked files that are not ignored, relative to the workspace."""
    listed = view.git(["ls-files", "-z", "--others", "--exclude-standard"])
    _raise_on_failure(listed, "cannot list untracked files")
    return [_name(p) for p in listed.output.split(b"\0") if p]


def differing(view: View, since: str | None, new: list[str]) -> list[str]:
    """Paths (relative to the workspace) whose content differs from commit `since` (None:
    from nothing at all), with `new`, the untracked files."""
    if since is None:
        empty = view.git(["hash-object", "-t", "tree", "--stdin"])
        _raise_on_failure(empty, "cannot name the empty tree")
        since = empty.output.decode("ascii").strip()
    diff = view.git(
        [
            "diff",
            "--name-only",
            "-z",
            "--relative",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            "--ignore-submodules=dirty",
            since,
            "--",
        ]
    )
    _raise_on_failure(diff, f"cannot compare with {since[:12]}")
    names = {_name(p) for p in diff.output.split(b"\0") if p}
    names.update(new)
    return sorted(names)


@dataclass(frozen=True, slots=True)
class View:
    """git, run in the workspace on a sealed view of its repository (checks/git_view.py)."""

    workspace: str
    folder: str
    top: str
    timeout: float

    def git(self, args: Sequence[str]) -> Finished:
        return run_git(args, self.workspace, self.timeout, self.folder, self.top)


def _name(raw: bytes) -> str:
    return os.fsdecode(raw).replace(os.sep, "/")


def _raise_on_failure(done: Finished, what: str) -> None:
    if done.exit_code != 0:
        said = done.errors.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {what}" + (f": {said[-1]}" if said else ""))


def limited(paths: list[str], globs: tuple[Glob, ...]) -> list[str]:
    """The paths a glob matches, itself or through a folder it is in (`src` covers `src/a.py`)."""
    if not globs:
        return paths
    return [p for p in paths if any(_covers(g, p) for g in globs)]


def _covers(glob: Glob, path: str) -> bool:
    parts = path.split("/")
    return any(glob.matches("/".join(parts[:n])) for n in range(len(parts), 0, -1))


def check_git(check: GitCheck, workspace: str, baseline: Baseline | None, timeout: float) -> tuple[bool, str]:
    where = " in " + ", ".join(f"`{g.text}`" for g in check.paths) if check.paths else ""
    try:
        repo = locate(workspace, timeout)
        if repo is None:
            return False, "the workspace is not in a git repository"
        with sealed(repo, workspace, timeout, repo.head) as folder:
            view = View(workspace, folder, repo.top, timeout)
            head = _commit(view, repo)
            reasons: list[str] = []
            passed = True
            new = untracked(view)
            if check.changes:
                ok, why = _changes(check, view, baseline, where, new)
                passed = passed and ok
                reasons.append(why)
            if check.clean:
                dirty = limited(differing(view, head, new), check.paths)
                if dirty:
                    passed = False
                    reasons.append(f"{_count(dirty)} uncommitted{where}: {_shown(dirty)}")
                else:
                    reasons.append(f"nothing uncommitted{where}")
    except GitError as exc:
        return False, str(exc)
    except OSError as exc:  # the view's folder could not be made
        return False, f"git cannot be asked: {exc.strerror or exc}"
    return passed, "; ".join(reasons)


def _changes(
    check: GitCheck, view: View, baseline: Baseline | None, where: str, new: list[str]
) -> tuple[bool, str]:
    if baseline is None or baseline.state == "unavailable":
        detail = f" ({baseline.detail})" if baseline is not None and baseline.detail else ""
        return False, f"no baseline was recorded when the run began{detail}, so changes cannot be told"
    if baseline.state == "not-a-repository":
        return False, "the workspace was not a git repository when the run began, so changes cannot be told"
    since = baseline.head
    try:
        changed = limited(differing(view, since, new), check.paths)
    except GitError:
        if since is None:  # the empty tree is always known: something else went wrong
            raise
        known = view.git(["cat-file", "-e", f"{since}^{{commit}}"])
        if known.exit_code != 0:
            return False, f"the commit the run began at ({since[:12]}) is no longer in the repository"
        raise
    start = f"commit {since[:12]}" if since else "an empty repository"
    if not changed:
        return False, f"no changes{where} since the run began (at {start})"
    return True, f"{_count(changed)} changed{where} since the run began (at {start}): {_shown(changed)}"


def _count(paths: list[str]) -> str:
    return f"{len(paths)} file{'s' * (len(paths) != 1)}"


def _shown(paths: list[str]) -> str:
    more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
    return ", ".join(f"`{p}`" for p in paths[:5]) + more
