"""What a step protects, taken cheaply before and after each tool call (spec/gate.md,
"Effects, not words"): the work tree's content as one git tree, HEAD and every ref,
git's hook keys, and the bytes of the files that hold the gate's installation (git's
hooks, the harnesses' settings, .git/config).

The tree comes from a private index in the run's gate folder (`git add -A` then
`git write-tree`): git's own stat cache means an unchanged file is not hashed again,
so a snapshot costs about what `git status` costs. The protected files' bytes are
kept by hash in the gate folder, so that they can be put back byte for byte.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from typing import Any

import json

# the harnesses' settings files that hold the gate's hooks, relative to the workspace
SETTINGS_FILES = (
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".gemini/settings.json",
    ".codex/hooks.json",
    ".cursor/hooks.json",
)
# git's config keys that decide which hooks run, as `git config --get-regexp` names them
# (lower case, whatever case they were written in)
HOOK_KEYS = r"^(core\.hookspath|core\.fsmonitor|hook\..*)$"
ABSENT = ""  # a protected file that does not exist
GIT_TIMEOUT = 120
# what git keeps in its folder of a command in progress, which a refused one leaves behind
IN_PROGRESS = (
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "MERGE_HEAD",
    "MERGE_MSG",
    "MERGE_MODE",
    "AUTO_MERGE",
    "sequencer",
    "rebase-apply",
    "rebase-merge",
)


class Repo(NamedTuple):
    """Where a workspace's repository keeps things, as git says."""

    top: str  # the work tree's top folder
    git_dir: str  # this work tree's git folder (HEAD, index)
    common_dir: str  # the repository's shared git folder (refs, config)
    hooks: str  # the hooks folder the baseline was taken with


class Snapshot(NamedTuple):
    tree: str | None  # the work tree's content (None: not in a git repository)
    refs: dict[str, str]  # refname -> object; "HEAD" -> "ref: refs/heads/x" or an object
    config: list[list[str]]  # git's hook keys, [key, value] as git reads them
    files: dict[str, str]  # protected file (absolute) -> "sha256 mode", or ABSENT
    staged: str | None = None  # the repository's own index as a tree (None: none, or unmerged)
    in_progress: tuple[str, ...] = ()  # the names of IN_PROGRESS present in the git folder

    def as_json(self) -> dict[str, Any]:
        return {
            "tree": self.tree,
            "refs": self.refs,
            "config": self.config,
            "files": self.files,
            "staged": self.staged,
            "in_progress": list(self.in_progress),
        }


class GateFolder(NamedTuple):
    """A run's folder of the gate's own files, in handrail's home."""

    path: str

    @property
    def index_file(self) -> str:
        return os.path.join(self.path, "index")

    @property
    def blobs(self) -> str:
        return os.path.join(self.path, "blobs")

    def blob(self, digest: str) -> str:
        return os.path.join(self.blobs, digest)


def gate_folder(home: str, run_id: str) -> GateFolder:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)[:100]
    return GateFolder(os.path.join(home, "gate", safe))


def clean_env(index: str | None = None) -> dict[str, str]:
    """The environment the gate runs git in: none of the caller's GIT_* variables
    (a hook run from git carries GIT_DIR, GIT_INDEX_FILE...), and `index` as the index."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    if index is not None:
        env["GIT_INDEX_FILE"] = index
    return env


def git(
    repo_top: str,
    *args: str,
    index: str | None = None,
    stdin: bytes | None = None,
    check: bool = True,
    env_more: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(
        ["git", "-c", "core.fsmonitor=false", *args],
        cwd=repo_top,
        env={**clean_env(index), **(env_more or {})},
        input=stdin,
        capture_output=True,
        timeout=GIT_TIMEOUT,
        check=False,
    )
    if check and done.returncode != 0:
        raise GitFailed(
            f"git {' '.join(args[:3])} failed: {done.stderr.decode(errors='replace').strip()[:300]}"
        )
    return done


class GitFailed(Exception):
    pass


def find_repo(workspace: str) -> Repo | None:
    """The repository holding `workspace`, or None when there is none."""
    done = subprocess.run(
        [
            "git",
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--absolute-git-dir",
            "--git-common-dir",
            "--git-path",
            "hooks",
        ],
        cwd=workspace,
        env=clean_env(),
        capture_output=True,
        timeout=GIT_TIMEOUT,
        check=False,
    )
    lines = done.stdout.decode(errors="replace").splitlines()
    if done.returncode != 0 or len(lines) != 4:
        return None
    return Repo(*lines)


def protected_files(repo: Repo | None, workspace: str) -> list[str]:
    """The files whose bytes hold the gate's installation."""
    found = [os.path.join(workspace, name) for name in SETTINGS_FILES]
    if repo is not None:
        if repo.top != workspace:
            found += [os.path.join(repo.top, name) for name in SETTINGS_FILES]
        found.append(os.path.join(repo.common_dir, "config"))
        try:
            names = sorted(os.listdir(repo.hooks))
        except OSError:
            names = []
        found += [os.path.join(repo.hooks, name) for name in names]
    return found


def file_state(path: str, folder: GateFolder | None) -> str:
    """A file's hash and mode (its bytes kept in `folder`), or ABSENT."""
    try:
        if os.path.islink(path) or not os.path.isfile(path):
            return ABSENT if not os.path.lexists(path) else "other 0"
        with open(path, "rb") as opened:
            data = opened.read()
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        return ABSENT
    digest = hashlib.sha256(data).hexdigest()
    if folder is not None and not os.path.exists(folder.blob(digest)):
        os.makedirs(folder.blobs, exist_ok=True)
        temporary = folder.blob(digest) + ".tmp"
        with open(temporary, "wb") as kept:
            kept.write(data)
        os.replace(temporary, folder.blob(digest))
    return f"{digest} {mode:o}"


def take(workspace: str, folder: GateFolder, repo: Repo | None, leave_out: tuple[str, ...] = ()) -> Snapshot:
    """What the step protects, now. `leave_out`: folders never part of the work tree's
    content (handrail's home, where the gate keeps its own files, when it is inside)."""
    os.makedirs(folder.path, exist_ok=True)
    tree: str | None = None
    refs: dict[str, str] = {}
    config: list[list[str]] = []
    if repo is not None:
        if not os.path.exists(folder.index_file):
            _seed_index(repo, folder)
        env_index = clean_env(folder.index_file)
        excluded = [
            f":(exclude,top){os.path.relpath(path, repo.top)}"
            for path in leave_out
            if path.startswith(repo.top.rstrip(os.sep) + os.sep)
        ]
        # the refs and the config read while the tree is hashed: three processes at once
        listing = subprocess.Popen(
            ["git", "for-each-ref", "--format=%(objectname) %(refname)"],
            cwd=repo.top,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        keys = subprocess.Popen(
            ["git", "config", "--null", "--get-regexp", HOOK_KEYS],
            cwd=repo.top,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            added = subprocess.run(
                ["git", "-c", "core.fsmonitor=false", "add", "-A", "--ignore-errors", "--", ".", *excluded],
                cwd=repo.top,
                env=env_index,
                capture_output=True,
                timeout=GIT_TIMEOUT,
                check=False,
            )
            if added.returncode not in (0, 1) and os.path.exists(folder.index_file):
                # the private index is only a cache of stat data: a damaged one is made anew
                os.remove(folder.index_file)
                _seed_index(repo, folder)
                added = subprocess.run(
                    added.args, cwd=repo.top, env=env_index, capture_output=True, check=False
                )
            if added.returncode not in (0, 1):
                raise GitFailed(f"git add -A failed: {added.stderr.decode(errors='replace').strip()[:300]}")
            tree = git(repo.top, "write-tree", index=folder.index_file).stdout.decode().strip()
        finally:
            listed, _ = listing.communicate(timeout=GIT_TIMEOUT)
            configured, _ = keys.communicate(timeout=GIT_TIMEOUT)
        for line in listed.decode(errors="replace").splitlines():
            oid, _, name = line.partition(" ")
            refs[name] = oid
        refs["HEAD"] = _head(repo)
        config = _keys(configured)
    files = {path: file_state(path, folder) for path in protected_files(repo, workspace)}
    if repo is None:
        return Snapshot(tree, refs, config, files)
    pending = tuple(name for name in IN_PROGRESS if os.path.lexists(os.path.join(repo.git_dir, name)))
    return Snapshot(tree, refs, config, files, real_index(repo, folder), pending)


def real_index(repo: Repo, folder: GateFolder) -> str | None:
    """The repository's own index as a tree, written from a copy (the real one is never
    locked by the gate), and remembered by the index file's size, time and inode so that
    an index no command touched costs one stat."""
    import contextlib  # lazy: only an index that changed is copied
    import shutil  # lazy: only an index that changed is copied

    path = os.path.join(repo.git_dir, "index")
    remembered = os.path.join(folder.path, "real-index")
    try:
        found = os.stat(path)
    except FileNotFoundError:
        # nothing was ever staged: the empty tree, so that a first `git add` is judged too
        key = "none"
    except OSError:
        return None
    else:
        key = f"{found.st_size} {found.st_mtime_ns} {found.st_ino}"
    try:
        with open(remembered, encoding="utf-8") as opened:
            known, _, tree = opened.read().rpartition(" ")
        if known == key:
            return tree or None
    except OSError:
        pass
    copy = os.path.join(folder.path, "real-index.copy")
    if key == "none":
        with contextlib.suppress(FileNotFoundError):
            os.remove(copy)  # git reads an index file that is not there as no entries
    else:
        shutil.copyfile(path, copy)
    done = git(repo.top, "write-tree", index=copy, check=False)  # fails on unmerged entries
    tree = done.stdout.decode().strip() if done.returncode == 0 else ""
    with open(remembered + ".tmp", "w", encoding="utf-8") as written:
        written.write(f"{key} {tree}")
    os.replace(remembered + ".tmp", remembered)
    return tree or None


class Locked:
    """The gate folder held by one hook at a time: tool calls the harness runs side by
    side take their snapshots in turn (each on the private index)."""

    def __init__(self, folder: GateFolder) -> None:
        self.folder = folder
        self.handle = -1

    def __enter__(self) -> Locked:
        import fcntl  # lazy: only a snapshot needs it

        # a bare descriptor, the folder made only when it is not there: a server takes
        # this lock at every check, and a buffered file and a makedirs cost it 20 us more
        path = os.path.join(self.folder.path, "lock")
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
        try:
            handle = os.open(path, flags, 0o666)
        except FileNotFoundError:
            os.makedirs(self.folder.path, exist_ok=True)
            handle = os.open(path, flags, 0o666)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
        except BaseException:
            os.close(handle)
            raise
        self.handle = handle
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.handle)  # closing releases the lock


def hook_keys(repo: Repo) -> list[list[str]]:
    """git's hook keys as git reads them in the repository now."""
    done = subprocess.run(
        ["git", "config", "--null", "--get-regexp", HOOK_KEYS],
        cwd=repo.top,
        env=clean_env(),
        capture_output=True,
        timeout=GIT_TIMEOUT,
        check=False,
    )
    return _keys(done.stdout)


def _keys(listed: bytes) -> list[list[str]]:
    found: list[list[str]] = []
    for entry in listed.decode(errors="replace").split("\0"):
        if entry:
            key, _, value = entry.partition("\n")
            found.append([key, value])
    return found


def _seed_index(repo: Repo, folder: GateFolder) -> None:
    """The private index starts as a copy of the repository's own, whose stat cache
    spares hashing every file on the first snapshot."""
    import shutil  # lazy: once per run

    real = os.path.join(repo.git_dir, "index")
    if os.path.exists(real):
        shutil.copyfile(real, folder.index_file)


def _head(repo: Repo) -> str:
    try:
        with open(os.path.join(repo.git_dir, "HEAD"), encoding="utf-8", errors="replace") as opened:
            return opened.read().strip()
    except OSError:
        return ""


BASELINE = "baseline.json"
ANCHORED = "anchored"  # the baselines by the hash the run row keeps (gate/anchor.py)


def save(folder: GateFolder, snapshot: Snapshot, repo: Repo | None, step: str | None = None) -> str:
    """`step`: the run's step the baseline was taken at. Returns the sha256 of the bytes
    written, which are kept under that name too, for gate/anchor.py to find by it."""
    data = encoded(snapshot, repo, step)
    sha = keep(folder, data)
    write(folder, BASELINE, data)
    return sha


def encoded(snapshot: Snapshot, repo: Repo | None, step: str | None) -> bytes:
    body = {"snapshot": snapshot.as_json(), "repo": list(repo) if repo is not None else None, "step": step}
    return json.dumps(body).encode()


def keep(folder: GateFolder, data: bytes) -> str:
    """A baseline's bytes kept by their sha256, which is returned."""
    sha = hashlib.sha256(data).hexdigest()
    if not os.path.exists(os.path.join(folder.path, ANCHORED, sha)):
        os.makedirs(os.path.join(folder.path, ANCHORED), exist_ok=True)
        write(folder, os.path.join(ANCHORED, sha), data)
    return sha


def write(folder: GateFolder, name: str, data: bytes) -> None:
    path = os.path.join(folder.path, name)
    os.makedirs(folder.path, exist_ok=True)
    with open(path + ".tmp", "wb") as written:
        written.write(data)
    os.replace(path + ".tmp", path)


def load(folder: GateFolder) -> tuple[Snapshot, Repo | None] | None:
    """The last baseline kept, with the repository as it was found then; None if none
    (or one that cannot be read: a new one is taken)."""
    try:
        with open(os.path.join(folder.path, BASELINE), "rb") as opened:
            return parse(opened.read())
    except OSError:
        return None


def parse(data: bytes) -> tuple[Snapshot, Repo | None] | None:
    """A baseline file's bytes read back; None if they are not one."""
    try:
        body = json.loads(data)
        raw = body["snapshot"]
        snapshot = Snapshot(
            raw["tree"],
            dict(raw["refs"]),
            [list(p) for p in raw["config"]],
            dict(raw["files"]),
            raw.get("staged"),
            tuple(raw.get("in_progress", ())),
        )
        repo = Repo(*body["repo"]) if body.get("repo") else None
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    return snapshot, repo


def step_of(folder: GateFolder) -> str | None:
    """The step the last baseline was taken at (None: none, or not known)."""
    try:
        with open(os.path.join(folder.path, BASELINE), encoding="utf-8") as opened:
            step = json.loads(opened.read()).get("step")
    except (OSError, ValueError, AttributeError):
        return None
    return step if isinstance(step, str) else None
