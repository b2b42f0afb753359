"""Workflows from a git repository: `--workflows git+https://host/org/repo.git[@ref][#subdir]`.

Also `git+file://`, `git+ssh://` and `git+http://`, and WorkRail's WORKFLOW_GIT_REPOS
(comma-separated repository URLs, `git+` optional). The repository is fetched with
the `git` program (an argument list, no shell, a timeout, no prompts, no hooks, the environment of
checks/processes.py) into
`$HANDRAIL_HOME/git/<hash of url and ref>/` (HANDRAIL_HOME defaults to ~/.handrail):
the objects in `repo.git`, the files in `tree`, which the catalog reads as it reads
any folder. A server fetches again every `refresh` seconds and checks the new commit
out in place, so a file the commit breaks keeps its last good version in service by
the catalog's own rule; a fetch that fails leaves the last checkout in service and is
reported (H002, a warning) in `handrail sources`, `handrail list` and workflow_list.
A #subdir that a committed link leads out of the checkout is never read (H002).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from handrail.checks.processes import NETWORK_VARIABLES, SSH_VARIABLES, git_argv, git_environment, run
from handrail.home import git_checkouts
from handrail.model.errors import Diagnostic

log = logging.getLogger("handrail.git")

PREFIX = "git+"
SCHEMES = ("https", "http", "ssh", "file")
DEFAULT_REFRESH = 60.0
GIT_TIMEOUT = 120.0  # seconds one git command may take before it is killed
ALLOWED_PROTOCOLS = "file:https:http:ssh"  # never ext:: (it runs a command) nor the others
ENV_VARIABLE = "WORKFLOW_GIT_REPOS"
OUTPUT_BYTES = 1 << 20  # of one git answer (a commit name); its last words when it fails


class GitSpecError(ValueError):
    """A git source that cannot be understood; the message says why."""


def is_git(item: str | os.PathLike[str]) -> bool:
    return isinstance(item, str) and item.startswith(PREFIX)


@dataclass(frozen=True)
class GitSpec:
    url: str  # what git fetches
    ref: str | None  # a branch, tag or commit; None: the remote's HEAD
    subdir: str  # the folder of the repository that holds the workflows ("" for all)

    @classmethod
    def parse(cls, text: str) -> GitSpec:
        """`git+SCHEME://host/path[@ref][#subdir]` (the `git+` may be left out)."""
        raw = text.strip().removeprefix(PREFIX)
        parts = urlsplit(raw)
        if parts.scheme not in SCHEMES:
            raise GitSpecError(
                f"{text!r}: a git source is git+https://, git+http://, git+ssh:// or git+file:// "
                "followed by the repository"
            )
        path, at, ref = parts.path.rpartition("@") if "@" in parts.path else (parts.path, "", "")
        if at and not ref:
            raise GitSpecError(f"{text!r}: nothing follows `@`; name a branch, tag or commit")
        if ref.startswith("-") or any(c.isspace() for c in ref):
            raise GitSpecError(f"{text!r}: {ref!r} is not a branch, tag or commit")
        subdir = parts.fragment.strip("/")
        if any(piece in ("..", "") for piece in subdir.split("/")) and subdir:
            raise GitSpecError(f"{text!r}: the #subdir must be a relative path inside the repository")
        if not path or (parts.scheme != "file" and not parts.netloc):
            raise GitSpecError(f"{text!r}: no repository named")
        url = urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
        return cls(url, ref or None, subdir)

    @property
    def shown(self) -> str:
        """The URL without any password or token in it: for logs and listings."""
        parts = urlsplit(self.url)
        if "@" not in parts.netloc:
            return self.url
        user, _, host = parts.netloc.rpartition("@")
        name = user.partition(":")[0]
        return urlunsplit((parts.scheme, f"{name}@{host}", parts.path, parts.query, ""))


@dataclass(eq=False)
class GitSource:
    """One repository's checkout in the cache, and what the last fetch found."""

    spec: GitSpec
    cache: Path
    refresh: float = DEFAULT_REFRESH
    timeout: float = GIT_TIMEOUT
    commit: str | None = None  # the commit checked out (and served)
    error: str | None = None  # why the last fetch failed, if it did
    _synced: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None

    @classmethod
    def of(
        cls, text: str, environ: Mapping[str, str] | None = None, *, refresh: float | None = None
    ) -> GitSource:
        spec = GitSpec.parse(text)
        key = hashlib.sha256(f"{spec.url}@{spec.ref or ''}".encode()).hexdigest()[:24]
        every = DEFAULT_REFRESH if refresh is None else refresh
        return cls(spec, git_checkouts(environ) / key, every)

    @property
    def tree(self) -> Path:
        return self.cache / "tree"

    @property
    def path(self) -> Path:
        """The folder the catalog reads."""
        return self.tree / self.spec.subdir if self.spec.subdir else self.tree

    def describe(self) -> dict[str, Any]:
        """How a listing names where a workflow came from."""
        out: dict[str, Any] = {"kind": "git", "url": self.spec.shown, "commit": self.commit}
        if self.spec.ref:
            out["ref"] = self.spec.ref
        return out

    def ensure(self) -> None:
        """Fetch once, if nothing has been fetched by this process yet."""
        if not self._synced:
            self.sync(first=True)

    def problems(self) -> list[Diagnostic]:
        self.ensure()
        if self.error is None:
            return []
        serving = f"serving commit {self.commit[:12]}" if self.commit else "no commit to serve yet"
        return [
            Diagnostic(
                "H002",
                "warning",
                f"cannot fetch git source {self.spec.shown}: {self.error}; {serving}",
                "",
                1,
                1,
                "check the URL, the ref and this machine's access to the repository",
                self.spec.shown,
            )
        ]

    def escape(self) -> Diagnostic | None:
        """H002 when the #subdir, or a folder on the way to it, is a committed link that
        leads out of the checkout: nothing is read there."""
        if not self.spec.subdir:
            return None
        tree, real = os.path.realpath(self.tree), os.path.realpath(self.path)
        if real == tree or real.startswith(tree.rstrip(os.sep) + os.sep):
            return None
        return Diagnostic(
            "H002",
            "error",
            f"git source {self.spec.shown}: #{self.spec.subdir} leads outside the repository's "
            "checkout (a link), so nothing is read from it",
            "",
            1,
            1,
            "name a folder the repository holds, not a link to one",
            self.spec.shown,
        )

    # -- fetching --------------------------------------------------------------------
    def sync(self, *, first: bool = False) -> bool:
        """Fetch the ref and check its commit out; whether the commit or the error changed.
        Never raises: a failure is kept in `error`, and the last checkout stays. `first`:
        only if no fetch has been made yet (two threads may ask for the first at once)."""
        with self._lock:
            if first and self._synced:
                return False
            before = (self.commit, self.error)
            try:
                with _cache_lock(self.cache):
                    self.commit = self._head()
                    fetched = self._fetch()
                    if fetched != self.commit:
                        self._git("checkout", "--quiet", "--force", "--detach", fetched, work_tree=True)
                        self.commit = fetched
                self.error = None
            except GitError as exc:  # the catalog reports it (H002), with every other problem
                self.error = str(exc)
            except OSError as exc:
                self.error = f"the cache folder {self.cache} cannot be used ({exc.strerror or exc})"
            self._synced = True
            if self.commit != before[0]:
                log.info("git source %s: now at commit %s", self.spec.shown, self.commit)
            return (self.commit, self.error) != before

    def _head(self) -> str | None:
        """The commit the cache holds checked out (left by an earlier run), if any."""
        if not (self.cache / "repo.git" / "HEAD").exists():
            self.cache.mkdir(parents=True, exist_ok=True)
            self._git("init", "--quiet", "--bare", "--template=", str(self.cache / "repo.git"), git_dir=False)
            return None
        try:
            return self._git("rev-parse", "--verify", "--quiet", "HEAD^{commit}") or None
        except GitError:  # a fresh repository has no HEAD yet
            return None

    def _fetch(self) -> str:
        ref = self.spec.ref or "HEAD"
        self._git("fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--", self.spec.url, ref)
        return self._git("rev-parse", "--verify", "FETCH_HEAD^{commit}")

    def _git(self, *args: str, git_dir: bool = True, work_tree: bool = False) -> str:
        argv = git_argv()
        if git_dir:
            argv.append(f"--git-dir={self.cache / 'repo.git'}")
        if work_tree:
            self.tree.mkdir(parents=True, exist_ok=True)
            argv.append(f"--work-tree={self.tree}")
        return _run([*argv, *args], args[0], self.timeout, self.spec.shown, self.spec.url)

    # -- refreshing ------------------------------------------------------------------
    def start(self, stop: threading.Event, on_change: Callable[[], None]) -> None:
        """Fetch every `refresh` seconds on a daemon thread until `stop` is set; call
        `on_change` after a fetch that moved the commit or changed the error."""
        if self._thread is not None:
            return

        def loop() -> None:
            while not stop.wait(self.refresh):
                if self.sync():
                    on_change()

        self._thread = threading.Thread(target=loop, name="handrail-git", daemon=True)
        self._thread.start()


class GitError(Exception):
    pass


def _environment() -> dict[str, str]:
    """The environment every git checks and sources share (checks/processes.py), with the
    transports a source may use and what ssh and a proxy need from the operator's."""
    env = git_environment(ALLOWED_PROTOCOLS, passed=SSH_VARIABLES + NETWORK_VARIABLES)
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")  # a server has nobody to ask
    return env


def _run(argv: list[str], verb: str, timeout: float, shown: str, secret: str) -> str:
    """Run git; its output, or GitError with its last words (any password in the URL hidden)."""
    done = run(argv, None, timeout, OUTPUT_BYTES, env=_environment(), separate_errors=True)
    if done.error is not None:
        raise GitError(done.error)
    if done.timed_out:  # ssh and the remote helpers went too: the whole group is killed
        raise GitError(f"git {verb} took longer than {timeout:g} seconds")
    if done.exit_code != 0:
        lines = [
            w.strip() for w in done.errors.decode("utf-8", "replace").replace(secret, shown).splitlines()
        ]
        said = [w.split(":", 1)[1].strip() for w in lines if w.startswith(("fatal:", "error:"))]
        why = (said or [w for w in lines if w] or [f"exit status {done.exit_code}"])[0]
        raise GitError(f"git {verb} failed: {why[:300]}")
    return done.output.decode("utf-8", "replace").strip()


@contextlib.contextmanager
def _cache_lock(cache: Path) -> Iterator[None]:
    """One fetch at a time per cache folder, across processes (replicas on one machine,
    `handrail list` while a server runs)."""
    cache.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # private workflows stay private
    cache.mkdir(exist_ok=True, mode=0o700)
    try:
        import fcntl  # lazy: only a git source's lock takes it
    except ImportError:  # not POSIX: one process at a time is the user's care
        yield
        return
    with open(cache / "lock", "a+b") as handle:
        deadline = time.monotonic() + GIT_TIMEOUT
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise GitError(f"another process holds {cache / 'lock'}") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
