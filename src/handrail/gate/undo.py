"""Two snapshots compared (gate/baseline.py), and what the step forbids of the
difference put back: files from the baseline's tree, refs moved back, the gate's
installation (hooks, settings, git's hook keys) rewritten byte for byte. What is
undone is first kept where the person can see it: the changed tree and each moved
ref under `refs/handrail/violations/<run>/<n>/`, and a copy of the changed files
in the run's gate folder.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from typing import NamedTuple

from handrail.gate.baseline import ABSENT, GateFolder, Repo, Snapshot, git, hook_keys
from handrail.runs.violations import Change, Forbidden

ZERO = "0" * 40
CHECKED_REFS = ("refs/heads/", "refs/tags/")  # where a commit lands; HEAD when detached too
OWN_REFS = "refs/handrail/"  # the gate's own: never judged, never undone
IDENTITY = {
    "GIT_AUTHOR_NAME": "handrail gate",
    "GIT_AUTHOR_EMAIL": "gate@handrail.invalid",
    "GIT_COMMITTER_NAME": "handrail gate",
    "GIT_COMMITTER_EMAIL": "gate@handrail.invalid",
}


def changes(repo: Repo | None, before: Snapshot, after: Snapshot) -> list[Change]:
    """Everything that differs between two snapshots that a rule can judge."""
    found: list[Change] = []
    if repo is not None and before.tree and after.tree and before.tree != after.tree:
        found += [Change("file", path, word) for path, word in _tree_diff(repo, before.tree, after.tree)]
    if repo is not None:
        found += _ref_changes(repo, before, after)
    config_file = os.path.join(repo.common_dir, "config") if repo is not None else None
    for path in sorted(set(before.files) | set(after.files)):
        if path == config_file:
            continue  # git writes its config for many reasons: only its hook keys count (below)
        was, now = before.files.get(path, ABSENT), after.files.get(path, ABSENT)
        if was != now:
            word = "added" if was == ABSENT else "deleted" if now == ABSENT else "modified"
            found.append(Change("installation", path, word))
    if before.config != after.config:
        was_keys = {k for k, _ in before.config}
        for key in sorted(was_keys | {k for k, _ in after.config}):
            if [p for p in before.config if p[0] == key] != [p for p in after.config if p[0] == key]:
                found.append(Change("installation", f"git config {key}", "modified"))
    return found


def staged_changes(repo: Repo | None, before: Snapshot, after: Snapshot) -> list[Change]:
    """What the repository's own index stages that the baseline's did not, path by path
    (`what` "staged"): judged as an edit of that path, whatever the work tree holds. An
    index git cannot write as a tree (unmerged entries) names no path."""
    if repo is None or not before.staged or not after.staged or before.staged == after.staged:
        return []
    return [Change("staged", path, word) for path, word in _tree_diff(repo, before.staged, after.staged)]


def _tree_diff(repo: Repo, old: str, new: str) -> list[tuple[str, str]]:
    """Each path (absolute) that differs between two trees, and how: added, deleted,
    modified (its content, its mode or its type)."""
    listed = git(repo.top, "diff-tree", "-r", "-z", "--no-renames", "--name-status", old, new).stdout
    fields = listed.decode(errors="surrogateescape").split("\0")
    return [
        (os.path.join(repo.top, path), {"A": "added", "D": "deleted"}.get(status[:1], "modified"))
        for status, path in zip(fields[0::2], fields[1::2], strict=False)
        if path
    ]


def _ref_changes(repo: Repo, before: Snapshot, after: Snapshot) -> list[Change]:
    moved = [
        name
        for name in sorted(set(before.refs) | set(after.refs))
        if before.refs.get(name) != after.refs.get(name) and not name.startswith(OWN_REFS)
    ]
    found: list[Change] = []
    known = sorted(
        {oid for name, oid in before.refs.items() if name != "HEAD" and not name.startswith(OWN_REFS)}
    )
    head = before.refs.get("HEAD", "")
    if head and not head.startswith("ref:"):
        known.append(head)
    for name in moved:
        old, new = before.refs.get(name, ""), after.refs.get(name, "")
        if name == "HEAD":
            if not new or new.startswith("ref:"):
                continue  # a switch of branch: not a commit
        elif not name.startswith(CHECKED_REFS):
            continue
        word = "commits" if new and brings_commits(repo, new, known) else "moved"
        found.append(Change("ref", name, word, old, new))
    return found


def brings_commits(repo: Repo, new: str, known: Sequence[str]) -> bool:
    """Whether `new` reaches a commit none of the `known` objects reaches."""
    lines = "".join(f"^{oid}\n" for oid in known if oid)
    done = git(repo.top, "rev-list", "-n", "1", "--stdin", new, stdin=lines.encode(), check=False)
    return done.returncode != 0 or bool(done.stdout.strip())


class Undone(NamedTuple):
    lines: list[str]  # each change and how it was undone, in words
    kept: list[str]  # where the undone changes are kept


def undo(
    repo: Repo | None,
    folder: GateFolder,
    run_id: str,
    before: Snapshot,
    after: Snapshot,
    found: Sequence[Forbidden],
) -> Undone:
    number = _next_number(folder)
    keep_folder = os.path.join(folder.path, "violations", str(number))
    safe_run = "".join(c if c.isalnum() or c in "-_" else "_" for c in run_id)[:100]
    prefix = f"{OWN_REFS}violations/{safe_run}/{number}"
    lines: list[str] = []
    kept: list[str] = [keep_folder]
    files = [f.change for f in found if f.change.what == "file"]
    refs = [f.change for f in found if f.change.what == "ref"]
    installed = [f.change for f in found if f.change.what == "installation"]
    staged = [f.change for f in found if f.change.what == "staged"]
    os.makedirs(keep_folder, exist_ok=True)
    if files and repo is not None and before.tree and after.tree:
        kept.append(_keep_tree(repo, after, after.tree, f"{prefix}/tree"))
        lines += _undo_files(repo, folder, before.tree, files, keep_folder)
    for change in refs:
        assert repo is not None
        git(repo.top, "update-ref", "-m", "handrail: kept", f"{prefix}/{change.target}", change.new)
        lines.append(_undo_ref(repo, before, change))
        if f"{prefix}/{change.target}" not in kept:
            kept.append(f"{prefix}/{change.target}")
    if installed:
        lines += _undo_installation(repo, folder, before, installed, keep_folder)
    if staged and repo is not None and after.staged:
        kept.append(_keep_tree(repo, after, after.staged, f"{prefix}/index"))
    if repo is not None:
        lines += _undo_index(repo, before, after, staged)
    return Undone(lines, kept)


def _undo_index(repo: Repo, before: Snapshot, after: Snapshot, staged: Sequence[Change]) -> list[str]:
    """The forbidden entries of the repository's own index as the baseline had them (what
    the step allows stays staged), and what a refused command left of itself in progress
    removed, as its `--abort` would: else a later allowed commit would take what it
    staged, and the next such command would refuse to start. An index no tree can be
    written of (a conflict left) is put back whole."""
    lines: list[str] = []
    for name in after.in_progress:
        if name in before.in_progress:
            continue
        path = os.path.join(repo.git_dir, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.remove(path)
        lines.append(f"{name} (left by a command in progress: removed)")
    if before.staged and after.staged is None:
        git(repo.top, "read-tree", "--reset", before.staged)  # --reset: keeps the stat cache, drops conflicts
        lines.append("the index (what was staged since: put back)")
    elif before.staged and staged:
        paths = [os.path.relpath(change.target, repo.top) for change in staged]
        # each path's entry as the baseline's tree has it, or none where it had none
        git(
            repo.top,
            "reset",
            "-q",
            before.staged,
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
            stdin="\0".join(paths).encode(errors="surrogateescape"),
            env_more={"GIT_LITERAL_PATHSPECS": "1"},
        )
        for path, change in zip(paths, staged, strict=True):
            done = "taken out of the index" if change.change == "added" else "the index's entry put back"
            lines.append(f"{path} (staged, {change.change}: {done})")
    return lines


def _next_number(folder: GateFolder) -> int:
    try:
        taken = [int(name) for name in os.listdir(os.path.join(folder.path, "violations")) if name.isdigit()]
    except OSError:
        taken = []
    return max(taken, default=0) + 1


def _keep_tree(repo: Repo, after: Snapshot, tree: str, name: str) -> str:
    """`tree` kept as a commit on what HEAD held, under the ref `name`."""
    head = after.refs.get("HEAD", "")
    parents: list[str] = []
    if head.startswith("ref:"):
        target = after.refs.get(head[4:].strip())
        parents = ["-p", target] if target else []
    elif head:
        parents = ["-p", head]
    done = git(
        repo.top,
        "commit-tree",
        tree,
        *parents,
        "-m",
        "handrail: changes the gate undid",
        env_more=IDENTITY,
    )
    commit = done.stdout.decode().strip()
    git(repo.top, "update-ref", "-m", "handrail: kept", name, commit)
    return name


def _undo_files(
    repo: Repo, folder: GateFolder, tree: str, files: Sequence[Change], keep_folder: str
) -> list[str]:
    lines: list[str] = []
    restore: list[str] = []
    for change in files:
        relative = os.path.relpath(change.target, repo.top)
        copy = os.path.join(keep_folder, "files", relative)
        if os.path.lexists(change.target) and not os.path.isdir(change.target):
            os.makedirs(os.path.dirname(copy), exist_ok=True)
            shutil.copy2(change.target, copy, follow_symlinks=False)
        if change.change == "added":
            if os.path.isdir(change.target) and not os.path.islink(change.target):
                lines.append(f"{relative} (added: a folder, left in place)")
                continue
            if os.path.lexists(change.target):
                os.remove(change.target)
            _remove_empty_parents(os.path.dirname(change.target), repo.top)
            lines.append(f"{relative} (added: removed)")
        else:
            if os.path.lexists(change.target) and (
                os.path.islink(change.target) or not os.path.isdir(change.target)
            ):
                os.remove(change.target)  # a link is replaced, never written through
            restore.append(relative)
            lines.append(f"{relative} ({change.change}: put back)")
    if restore:
        index = os.path.join(folder.path, "undo-index")
        git(repo.top, "read-tree", tree, index=index)
        git(repo.top, "checkout-index", "-f", "-z", "--stdin", index=index, stdin="\0".join(restore).encode())
    return lines


def _remove_empty_parents(folder: str, top: str) -> None:
    while folder.startswith(top.rstrip(os.sep) + os.sep):
        try:
            os.rmdir(folder)
        except OSError:
            return
        folder = os.path.dirname(folder)


def _undo_ref(repo: Repo, before: Snapshot, change: Change) -> str:
    name, old, new = change.target, change.old, change.new
    short = old[:12] if old else ""
    if name == "HEAD":
        if old.startswith("ref:"):
            git(repo.top, "symbolic-ref", "HEAD", old[4:].strip())
            return f"HEAD (detached at new commits: back on {old[4:].strip()})"
        git(repo.top, "update-ref", "--no-deref", "-m", "handrail: undone", "HEAD", old)
        return f"HEAD (new commits: moved back to {short})"
    if old:
        git(repo.top, "update-ref", "-m", "handrail: undone", name, old, new)
        return f"{name} (new commits: moved back to {short})"
    git(repo.top, "update-ref", "-d", name, new)
    return f"{name} (made with new commits: deleted)"


def _undo_installation(
    repo: Repo | None, folder: GateFolder, before: Snapshot, installed: Sequence[Change], keep_folder: str
) -> list[str]:
    lines: list[str] = []
    for change in installed:
        if change.target.startswith("git config "):
            continue
        path, state = change.target, before.files.get(change.target, ABSENT)
        if os.path.lexists(path) and not os.path.isdir(path):
            copy = os.path.join(keep_folder, "installation", path.lstrip(os.sep))
            os.makedirs(os.path.dirname(copy), exist_ok=True)
            shutil.copy2(path, copy, follow_symlinks=False)
        if state == ABSENT:
            if os.path.lexists(path) and not os.path.isdir(path):
                os.remove(path)
            lines.append(f"{path} ({change.change}: removed)")
            continue
        digest, _, mode = state.partition(" ")
        if digest == "other":
            lines.append(f"{path} ({change.change}: not a plain file before; left)")
            continue
        if os.path.lexists(path) and (os.path.islink(path) or not os.path.isdir(path)):
            os.remove(path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        shutil.copyfile(folder.blob(digest), path)
        os.chmod(path, int(mode, 8))
        lines.append(f"{path} ({change.change}: put back)")
    if repo is not None and any(c.target.startswith("git config ") for c in installed):
        lines += _undo_config(repo, folder, before, keep_folder)
    return lines


def _undo_config(repo: Repo, folder: GateFolder, before: Snapshot, keep_folder: str) -> list[str]:
    """git's hook keys as they were: the repository's config file put back as it was
    (what else changed in it is kept), then a key still different (set in another
    config file) overridden in the repository's own."""
    path = os.path.join(repo.common_dir, "config")
    state = before.files.get(path, ABSENT)
    if state != ABSENT and not state.startswith("other"):
        copy = os.path.join(keep_folder, "installation", path.lstrip(os.sep))
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        if os.path.isfile(path):
            shutil.copy2(path, copy)
        shutil.copyfile(folder.blob(state.partition(" ")[0]), path)
    if hook_keys(repo) == before.config:
        return ["git config hook keys (put back with the repository's config file)"]
    wanted = dict(before.config)
    for key in sorted({k for k, _ in hook_keys(repo)} - set(wanted)):
        git(repo.top, "config", "--local", "--unset-all", key, check=False)
    for key, value in wanted.items():
        git(repo.top, "config", "--local", "--replace-all", key, value)
    for key, _ in hook_keys(repo):  # still set, in a config file other than the repository's
        if key == "core.hookspath" and key not in wanted:
            git(repo.top, "config", "--local", "core.hooksPath", repo.hooks)
        elif key == "core.fsmonitor" and key not in wanted:
            git(repo.top, "config", "--local", "core.fsmonitor", "false")
    return ["git config hook keys (put back in the repository's config)"]
