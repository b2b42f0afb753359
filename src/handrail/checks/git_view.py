"""A workspace's repository as git checks see it: its objects, HEAD and index, never
its configuration.

A repository's `.git/config` (and what it includes) can name programs git runs while
it compares files: a clean filter, a textconv, an fsmonitor, hooks. git always reads
that file, whatever the command line says. So a check asks git only where the
repository's files are and which commit HEAD names (which reads no object, no index
and runs nothing), then works in a git folder of its own: HEAD set to that commit,
the repository's objects borrowed as an alternate, a copy of its index, and a
configuration handrail writes, holding only the few settings that decide whether a
file differs (file modes, links, case, line endings). With no filter or diff driver
defined there, `.gitattributes` can name one but not make it run; nothing is ever
written to the repository.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from handrail.checks.processes import Finished, git_argv, git_environment, run

# the repository's settings that decide whether a working file differs from the index
KEPT = r"^core\.(filemode|symlinks|ignorecase|precomposeunicode|autocrlf|eol|checkstat|trustctime)$"
PLAIN_VALUE = re.compile(r"[A-Za-z0-9_-]{1,16}")
# a copied file past this is not a real index (ten million entries): a sparse one would fill the disk
MAX_COPIED_BYTES = 1 << 30
OUTPUT_BYTES = 64 << 20  # of one git answer (a list of files); more is an error, never cut short


class GitError(Exception):
    """git could not answer: not installed, timed out, or refused."""


@dataclass(frozen=True, slots=True)
class Repository:
    git_dir: str  # the workspace's git folder (a linked worktree's own)
    common_dir: str  # where the objects are
    top: str  # the top of the working tree
    object_format: str  # sha1 or sha256
    head: str | None  # the object HEAD names; None: no commit yet


def run_git(
    args: Sequence[str], cwd: str, timeout: float, git_dir: str | None = None, top: str | None = None
) -> Finished:
    """git's answer: its output in `output`, its complaints in `errors`."""
    where = [f"--git-dir={git_dir}", f"--work-tree={top}"] if git_dir and top else []
    done = run(
        git_argv(*where, *args), cwd, timeout, OUTPUT_BYTES, env=git_environment(), separate_errors=True
    )
    if done.error is not None:
        raise GitError(done.error)
    if done.timed_out:
        raise GitError(f"`git {' '.join(args)}` took longer than {timeout:g} s")
    if done.truncated:
        raise GitError(f"`git {' '.join(args)}` printed more than {OUTPUT_BYTES} bytes")
    return done


def locate(workspace: str, timeout: float) -> Repository | None:
    """The repository the workspace is in, or None. Reads where things are and the
    name HEAD points at: no object, no index, so nothing a configuration names runs."""
    done = run_git(
        [
            "rev-parse",
            "--path-format=absolute",
            "--git-dir",
            "--git-common-dir",
            "--show-toplevel",
            "--show-object-format",
            "--verify",
            "--quiet",
            "HEAD",
        ],
        workspace,
        timeout,
    )
    lines = done.output.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) < 4 or not lines[2]:  # not a repository, or a bare one
        return None
    head = lines[4].strip() if done.exit_code == 0 and len(lines) > 4 else None
    # a `core.worktree` can name any folder: only one holding the workspace is its tree
    here, top = os.path.realpath(workspace), os.path.realpath(lines[2])
    if os.path.commonpath([here, top]) != top:
        raise GitError(f"the repository's working tree `{lines[2]}` does not hold the workspace")
    return Repository(lines[0], lines[1], lines[2], lines[3].strip(), head)


def _kept_settings(repo: Repository, workspace: str, timeout: float) -> list[tuple[str, str]]:
    done = run_git(["config", "-z", "--get-regexp", KEPT], workspace, timeout)
    kept: dict[str, str] = {}
    for record in done.output.decode("utf-8", "replace").split("\0"):
        key, _, value = record.partition("\n")
        if key and PLAIN_VALUE.fullmatch(value):
            kept[key.lower()] = value  # the last one wins, as in git
    return sorted(kept.items())


def _config(repo: Repository, settings: list[tuple[str, str]]) -> str:
    lines = ["[core]", "\tbare = false", "\thooksPath = /dev/null", "\tfsmonitor = false"]
    lines += [f"\t{key.removeprefix('core.')} = {value}" for key, value in settings]
    if repo.object_format != "sha1":
        lines += ["\trepositoryformatversion = 1", "[extensions]", f"\tobjectformat = {repo.object_format}"]
    else:
        lines += ["\trepositoryformatversion = 0"]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def sealed(repo: Repository, workspace: str, timeout: float, head: str | None) -> Iterator[str]:
    """A git folder of our own standing for the repository (see the module's comment);
    removed on the way out. `head`: the commit to set HEAD to (None: no commit)."""
    folder = tempfile.mkdtemp(prefix="handrail-git-view-")
    try:
        os.makedirs(os.path.join(folder, "objects", "info"))
        os.makedirs(os.path.join(folder, "refs", "heads"))
        os.makedirs(os.path.join(folder, "info"))
        with open(os.path.join(folder, "objects", "info", "alternates"), "w", encoding="utf-8") as handle:
            handle.write(os.path.join(repo.common_dir, "objects") + "\n")
        with open(os.path.join(folder, "HEAD"), "w", encoding="ascii") as handle:
            handle.write(f"{head}\n" if head else "ref: refs/heads/handrail-no-commit\n")
        with open(os.path.join(folder, "config"), "w", encoding="utf-8") as handle:
            handle.write(_config(repo, _kept_settings(repo, workspace, timeout)))
        _copy(os.path.join(repo.git_dir, "index"), os.path.join(folder, "index"))
        _copy(os.path.join(repo.common_dir, "info", "exclude"), os.path.join(folder, "info", "exclude"))
        for shared in glob.glob(os.path.join(glob.escape(repo.git_dir), "sharedindex.*")):
            _copy(shared, os.path.join(folder, os.path.basename(shared)))
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _copy(source: str, target: str) -> None:
    """A regular file's bytes, if it is one (a FIFO in its place is never opened), and its
    times: git tells a file changed within the index's own tick by the index's mtime."""
    try:
        handle = os.open(source, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            return
        if info.st_size > MAX_COPIED_BYTES:
            name = os.path.basename(source)
            raise GitError(f"the repository's `{name}` is larger than {MAX_COPIED_BYTES >> 20} MiB")
        with open(handle, "rb", closefd=False) as reading, open(target, "wb") as writing:
            shutil.copyfileobj(reading, writing)
        os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
    finally:
        os.close(handle)
