"""The stat fingerprint of what a baseline covers (spec/gate.md, "Nothing changed, without
git"): kept in a server's memory beside the baseline it vouches for, so that an
after-tool check that finds nothing changed runs no git process.

Taken after each full check whose baseline is the repository as it now is, it holds the
`lstat` (mtime and ctime in ns, size, inode, mode, device) of every entry of the work
tree that git's `add -A` can see (each folder too: an entry made, removed or renamed
moves its folder's times), of the files and folders git reads besides (HEAD, the refs,
the index, the config files, the excludes, the hooks) and of the harnesses' settings.
A user cannot set a ctime (`utime` sets it to now), so a change to any of them shows;
an entry absent from a folder it keeps is not read again (`checked`), as one made there
moves the folder's times.

Git's racy rule, with a margin: an entry whose mtime or ctime is not older than the
clock (a file in the gate's folder touched before the baseline was read) by the
filesystem's granularity at least could still change unseen, and such a fingerprint is
not kept. Anything it cannot vouch for (no repository, a repository inside the work
tree, a config file that includes another, a folder it cannot read) gives none, and the
full check runs as before.
"""

from __future__ import annotations

import functools
import os
import stat
import subprocess
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, NamedTuple

from handrail.gate.baseline import GIT_TIMEOUT, IN_PROGRESS, SETTINGS_FILES, clean_env

if TYPE_CHECKING:
    from handrail.gate.baseline import GateFolder, Repo

# mtime, ctime (ns), size, inode, mode, device; None: the path does not exist
Stat = tuple[int, int, int, int, int, int] | None
FINE_MARGIN_NS = 200_000_000  # far above a kernel tick, the coarsest clock a fine filesystem stamps with
COARSE_MARGIN_NS = 3_000_000_000  # a filesystem stamping whole seconds (FAT: two)
# above this many entries, none: comparing them costs about 5 µs each, and git's own
# check (a process's start, then C) is as quick by 10,000 (benchmarks/effects_bench.py)
MAX_ENTRIES = 5_000
KEPT = 16  # fingerprints a server keeps, one a run, the least recently used dropped
CLOCK = "clock"  # the file in the gate's folder whose mtime is the filesystem's now


class Fingerprint(NamedTuple):
    anchor: str  # the sha256 of the baseline file it vouches for (the row's anchor)
    step: str | None  # the step that baseline was taken at
    workspace: str
    paths: tuple[str, ...]
    stats: tuple[Stat, ...]


class Fingerprints:
    """A server's fingerprints by run id: an LRU of `KEPT`, shared by its hook threads."""

    def __init__(self, size: int = KEPT) -> None:
        self.size = size
        self.kept: OrderedDict[str, Fingerprint] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, run_id: str) -> Fingerprint | None:
        with self.lock:
            found = self.kept.get(run_id)
            if found is not None:
                self.kept.move_to_end(run_id)
            return found

    def put(self, run_id: str, found: Fingerprint | None) -> None:
        with self.lock:
            self.kept.pop(run_id, None)
            if found is not None:
                self.kept[run_id] = found
                while len(self.kept) > self.size:
                    self.kept.popitem(last=False)


def clock(folder: GateFolder) -> int:
    """The filesystem's now, as it stamps files: a file of the gate's folder touched."""
    path = os.path.join(folder.path, CLOCK)
    os.makedirs(folder.path, exist_ok=True)
    with open(path, "ab"):
        pass
    os.utime(path)  # the kernel's current time, as a write would stamp it
    return os.stat(path).st_mtime_ns


def stat_of(path: str) -> Stat:
    try:
        found = os.lstat(path)
    except OSError:
        return None
    return (found.st_mtime_ns, found.st_ctime_ns, found.st_size, found.st_ino, found.st_mode, found.st_dev)


def unchanged(found: Fingerprint) -> bool:
    """Whether every entry is as the fingerprint found it: `stat_of` inlined, as this loop
    is most of what a call that changed nothing costs."""
    lstat = os.lstat
    for path, was in zip(found.paths, found.stats, strict=True):
        try:
            now = lstat(path)
        except OSError:
            if was is None:
                continue
            return False
        if was != (now.st_mtime_ns, now.st_ctime_ns, now.st_size, now.st_ino, now.st_mode, now.st_dev):
            return False
    return True


def checked(paths: list[str], stats: list[Stat]) -> tuple[tuple[str, ...], tuple[Stat, ...]]:
    """The entries `unchanged` reads again: all but those absent from a folder the
    fingerprint keeps, as an entry made in a folder (created, linked, renamed in) moves
    the folder's times."""
    pairs = list(zip(paths, stats, strict=True))
    folders = {path for path, was in pairs if was is not None and stat.S_ISDIR(was[4])}
    kept = [(path, was) for path, was in pairs if was is not None or os.path.dirname(path) not in folders]
    return tuple(path for path, _ in kept), tuple(was for _, was in kept)


def take(
    repo: Repo,
    workspace: str,
    index: str,
    leave_out: tuple[str, ...],
    since: int,
    anchor: str,
    step: str | None,
) -> Fingerprint | None:
    """The fingerprint of what a baseline covers, or None when it cannot vouch for it.
    `since`: the clock read before the baseline was read; `index`: the gate's private index."""
    configs = _config_files(repo)
    if configs is None:
        return None
    excluded = _excluded(repo, index)
    if excluded is None:
        return None
    skipped, tracked = excluded
    inside = repo.top.rstrip(os.sep) + os.sep  # as the baseline leaves them out of the tree
    walked = _walk(repo.top, skipped, {os.path.normpath(p) for p in leave_out if p.startswith(inside)})
    if walked is None:
        return None
    paths = [*walked, *tracked, *configs, *_git_paths(repo), *_settings(repo, workspace)]
    paths = list(dict.fromkeys(paths))
    if len(paths) > MAX_ENTRIES:
        return None
    stats = [stat_of(path) for path in paths]
    if any(was is not None and _racy(was, since) for was in stats):
        return None
    return Fingerprint(anchor, step, workspace, *checked(paths, stats))


def _racy(was: tuple[int, int, int, int, int, int], since: int) -> bool:
    """Whether a change could leave this entry's times as they are: they are not safely
    older than the clock (by a whole-second filesystem's granularity where the ctime says so)."""
    mtime, ctime = was[0], was[1]
    margin = COARSE_MARGIN_NS if ctime % 1_000_000_000 == 0 else FINE_MARGIN_NS
    return max(mtime, ctime) >= since - margin


def _walk(top: str, skipped: set[str], leave_out: set[str]) -> list[str] | None:
    """Every entry below `top` git's `add -A` reads, folders included, but the folders git
    excludes (their own entry stays: it is its folder's) and `leave_out`; None when a
    folder cannot be read or holds a repository of its own (git adds it as a gitlink)."""
    found = [top]
    folders = [top]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            return None
        for entry in entries:
            path = entry.path
            if path in leave_out:
                continue
            if entry.name == ".git":
                if folder != top:
                    return None
                continue  # the repository's own: _git_paths
            found.append(path)
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
            except OSError:
                return None
            if is_folder and path not in skipped:
                folders.append(path)
        if len(found) > MAX_ENTRIES:
            return None
    return found


def _excluded(repo: Repo, index: str) -> tuple[set[str], list[str]] | None:
    """The folders git excludes as a whole (by its ignore rules, as `status
    --ignored=matching` shows them), and the tracked files that are ignored (in those
    folders too), both absolute; None when git cannot say."""
    env = clean_env(index)
    env["GIT_OPTIONAL_LOCKS"] = "0"
    common = ["git", "-c", "core.fsmonitor=false"]
    status = [*common, "status", "--porcelain=v2", "-z", "--ignored=matching", "--untracked-files=all"]
    listing = subprocess.Popen(
        [*common, "ls-files", "-z", "--cached", "--ignored", "--exclude-standard"],
        cwd=repo.top,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        done = subprocess.run(
            [*status, "--ignore-submodules=all", "--no-renames"],
            cwd=repo.top,
            env=env,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    finally:
        listed, _ = listing.communicate(timeout=GIT_TIMEOUT)
    if done.returncode != 0 or listing.returncode != 0:
        return None
    skipped: set[str] = set()
    for record in done.stdout.split(b"\0"):
        if record.startswith(b"! ") and record.endswith(b"/"):
            name = os.fsdecode(record[2:-1])
            skipped.add(os.path.join(repo.top, name))
    tracked = [os.path.join(repo.top, os.fsdecode(name)) for name in listed.split(b"\0") if name]
    return skipped, tracked


def _git_paths(repo: Repo) -> list[str]:
    """What git reads of the repository beside the work tree: HEAD, the index, every ref,
    the info folder (excludes, attributes), what a command in progress leaves, the hooks."""
    git_dir, common = repo.git_dir, repo.common_dir
    # not the git folders themselves: every `git status` takes the index's lock in them,
    # which moves their times though nothing changed; what is absent in them (a merge's
    # MERGE_HEAD...) is looked for again at each compare
    found = [os.path.join(git_dir, "HEAD")]
    dot_git = os.path.join(repo.top, ".git")
    if not os.path.isdir(dot_git) or os.path.islink(dot_git):
        found.append(dot_git)  # a file naming the git folder (a worktree's); a folder is its entries
    found += [os.path.join(git_dir, name) for name in ("index", "commondir", "config.worktree")]
    found += [os.path.join(common, name) for name in ("packed-refs", "config.worktree")]
    found += [os.path.join(git_dir, name) for name in IN_PROGRESS]
    for folder in {os.path.join(d, name) for d in (git_dir, common) for name in ("refs", "reftable", "info")}:
        found += _everything(folder)
    found += _everything(repo.hooks)
    return found


def _everything(folder: str) -> list[str]:
    """`folder` and all below it (links not followed); a folder that is not there is itself."""
    found = [folder]
    try:
        real = os.path.realpath(folder)
    except OSError:
        return found
    if real != folder:
        found.append(real)  # a folder reached through a link: the link and where it leads
    for root, dirs, names in os.walk(real):
        found += [os.path.join(root, name) for name in (*dirs, *names)]
    return found


def _settings(repo: Repo, workspace: str) -> list[str]:
    """The harnesses' settings files the baseline keeps the bytes of."""
    tops = dict.fromkeys((workspace, repo.top))
    return [os.path.join(top, name) for top in tops for name in SETTINGS_FILES]


def _config_files(repo: Repo) -> list[str] | None:
    """Every config file git reads (the system's, the user's, the repository's) and the
    user's excludes and attributes; None when one includes another, which is not followed."""
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    found = [
        *_system_configs(),
        os.path.join(home, ".gitconfig"),
        os.path.join(xdg, "git", "config"),
        os.path.join(xdg, "git", "ignore"),
        os.path.join(xdg, "git", "attributes"),
        os.path.join(repo.common_dir, "config"),
        os.path.join(repo.git_dir, "config.worktree"),
        os.path.join(repo.common_dir, "config.worktree"),
    ]
    named = False
    for path in found:
        try:
            with open(path, "rb") as opened:
                text = opened.read().lower()
        except OSError:
            continue
        if b"include" in text:
            return None
        named = named or b"excludesfile" in text or b"attributesfile" in text
    if named:  # an excludes or attributes file named in a config: where git finds it
        done = subprocess.run(
            ["git", "config", "-z", "--type=path", "--get-regexp", r"^core\.(excludesfile|attributesfile)$"],
            cwd=repo.top,
            env=clean_env(),
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
        for entry in done.stdout.split(b"\0"):
            value = entry.partition(b"\n")[2]
            if value:
                found.append(os.path.join(repo.top, os.fsdecode(value)))
    return found


@functools.cache
def _system_configs() -> tuple[str, ...]:
    """Where git reads its system config: /etc/gitconfig, or below its own prefix."""
    done = subprocess.run(
        ["git", "--exec-path"], env=clean_env(), capture_output=True, timeout=GIT_TIMEOUT, check=False
    )
    prefix = os.path.dirname(os.path.dirname(os.fsdecode(done.stdout.strip())))
    found = ["/etc/gitconfig"]
    if prefix and prefix not in ("/", "/usr"):
        found.append(os.path.join(prefix, "etc", "gitconfig"))
    return tuple(found)
