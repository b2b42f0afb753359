"""The one way handrail runs a program (command checks, git checks, git sources), and
the one policy for the environment it gets.

A program starts from an argument list, never through a shell, in a new session (so a
new process group), with stdin closed. At the time limit, and as soon as the program
itself exits, the whole group is killed, so nothing it started is left running.
Output is read as it comes and only its last bytes are kept: stdout and stderr
together, or each on its own.

The environment is always built here (`environment`): never one of handrail's own
settings (`HANDRAIL_*`: a token, a database URL). git gets less still
(`git_environment`): only PATH and the variables its caller names, with the
isolation variables below on top.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO

# after the program exits or is killed, how long to wait for the last of its output
# (a process that left the group could hold the pipe open for ever)
GRACE_SECONDS = 2.0
SECRET_PREFIX = "HANDRAIL_"  # handrail's own settings, never passed to a program


@dataclass(frozen=True, slots=True)
class Finished:
    exit_code: int | None  # None: it did not start, timed out, or never reported back
    duration_ms: int
    output: bytes  # the last bytes of its output (stdout, with stderr unless kept apart)
    truncated: bool  # output was longer than what is kept
    timed_out: bool
    error: str | None = None  # why it could not start
    errors: bytes = b""  # the last bytes of stderr, when kept apart


def environment(
    *,
    kept: Iterable[str] | None = None,
    added: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment a program gets: from the server's (`environ`, default os.environ)
    every variable (`kept` None) or only those named in `kept`, never a `HANDRAIL_*` one;
    then `added` on top. A check needs PATH and the like, not the server's secrets."""
    source = os.environ if environ is None else environ
    if kept is None:
        env = {k: v for k, v in source.items() if not k.startswith(SECRET_PREFIX)}
    else:
        env = {k: source[k] for k in kept if k in source and not k.startswith(SECRET_PREFIX)}
    if added:
        env.update(added)
    return env


def run(
    argv: Sequence[str],
    cwd: str | None,
    timeout: float,
    keep_bytes: int,
    *,
    env: Mapping[str, str],
    separate_errors: bool = False,
    die_with_parent: bool = False,
) -> Finished:
    """Run `argv` in `cwd` with `env` (made by `environment`) and at most `timeout`
    seconds. The last `keep_bytes` of stdout are kept (and of stderr, in `errors`, when
    `separate_errors`; otherwise stderr goes with stdout). `die_with_parent`: on Linux
    the program is killed when this thread's process dies, even by SIGKILL, when
    nothing is left to kill its group."""
    start = time.monotonic()
    argv, arm = _dying_with_parent(argv) if die_with_parent else (argv, None)
    try:
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if separate_errors else subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            env=dict(env),
            preexec_fn=arm,
        )
    except FileNotFoundError:
        return _not_started(start, f"`{argv[0]}` is not found" + ("" if "/" in argv[0] else " on PATH"))
    except PermissionError:
        return _not_started(start, f"`{argv[0]}` cannot be run: permission denied")
    except OSError as exc:
        return _not_started(start, f"`{argv[0]}` cannot be run: {exc.strerror or exc}")
    with _running_lock:
        _running.add(process.pid)
    assert process.stdout is not None
    pipes = [_Pipe(process.stdout, keep_bytes)]
    if process.stderr is not None:
        pipes.append(_Pipe(process.stderr, keep_bytes))
    try:
        timed_out = _pump(process, pipes, start + timeout)
    finally:
        for pipe in pipes:
            pipe.stream.close()
        # the leader is not reaped yet, so its group id cannot have been reused
        _kill_group(process.pid)
        process.wait()
        with _running_lock:
            _running.discard(process.pid)
    duration = int((time.monotonic() - start) * 1000)
    return Finished(
        exit_code=None if timed_out else process.returncode,
        duration_ms=duration,
        output=bytes(pipes[0].tail),
        truncated=pipes[0].total > len(pipes[0].tail),
        timed_out=timed_out,
        errors=bytes(pipes[1].tail) if len(pipes) > 1 else b"",
    )


def _pump(process: subprocess.Popen[bytes], pipes: list[_Pipe], deadline: float) -> bool:
    """Read the pipes until the program has exited (or is killed at `deadline`) and its
    output is drained or the grace is over; True when it timed out."""
    timed_out = False
    ended_at: float | None = None  # when the program exited or was killed
    pause = 0.001  # without a pidfd: how long to sleep before looking again, backing off
    exit_fd = _pidfd(process.pid)  # readable once the program exits (Linux), never reaped
    with selectors.DefaultSelector() as selector:
        for pipe in pipes:
            os.set_blocking(pipe.stream.fileno(), False)
            selector.register(pipe.stream, selectors.EVENT_READ, pipe)
        if exit_fd is not None:
            selector.register(exit_fd, selectors.EVENT_READ)
        try:
            while True:
                now = time.monotonic()
                if ended_at is None:
                    if _exited(process):
                        ended_at = now
                        _kill_group(process.pid)  # whatever it left running
                    elif now >= deadline:
                        timed_out = True
                        ended_at = now
                        _kill_group(process.pid)
                    if ended_at is not None and exit_fd is not None:
                        selector.unregister(exit_fd)  # it stays readable from now on
                reading = any(pipe.open for pipe in pipes)
                if ended_at is not None and (not reading or now - ended_at > GRACE_SECONDS):
                    break  # past the grace, something outside the group holds the pipe
                wait = 0.1 if ended_at is not None else max(0.0, min(0.25, deadline - now))
                if not reading and exit_fd is None:  # it closed its output; it is exiting, or not
                    time.sleep(min(wait, pause))
                    pause = min(pause * 2, 0.05)
                    continue
                for key, _ in selector.select(wait):
                    if key.data is None:
                        continue  # the program exited: seen at the top of the loop
                    if not key.data.read():
                        selector.unregister(key.fileobj)
        finally:
            if exit_fd is not None:
                os.close(exit_fd)
    return timed_out


class _Pipe:
    """One of the program's output pipes, and the last bytes read from it."""

    __slots__ = ("keep", "open", "stream", "tail", "total")

    def __init__(self, stream: IO[bytes], keep: int) -> None:
        self.stream = stream
        self.keep = keep
        self.tail = bytearray()
        self.total = 0
        self.open = True

    def read(self) -> bool:
        """Read what is there; False once the pipe is closed."""
        chunk = self.stream.read(65536)
        if chunk is None:
            return True
        if not chunk:
            self.open = False
            return False
        self.total += len(chunk)
        self.tail += chunk
        if len(self.tail) > self.keep:
            del self.tail[: len(self.tail) - self.keep]
        return True


_running: set[int] = set()  # process groups running now (their leaders' pids)
_running_lock = threading.Lock()


def kill_running() -> None:
    """Kill every running program's process group now: the server is stopping
    (SIGTERM, shutdown), and leaves nothing behind. Each check then ends as killed."""
    with _running_lock:
        groups = list(_running)
    for pgid in groups:
        _kill_group(pgid)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _dying_with_parent(argv: Sequence[str]) -> tuple[Sequence[str], Callable[[], None] | None]:
    """`argv` made to get SIGKILL when its parent dies (Linux's PR_SET_PDEATHSIG, kept
    across exec): through util-linux's `setpriv --pdeathsig`, which lets the program
    start without forking this whole interpreter (tens of ms: the `drive` benchmark),
    else prctl called through ctypes in the child before it runs. Elsewhere nothing:
    only the group is killed."""
    if not sys.platform.startswith("linux"):
        return argv, None
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        return [setpriv, "--pdeathsig", "KILL", "--", *argv], None
    return argv, _parent_death_signal()


def _parent_death_signal() -> Callable[[], None]:
    """What the child runs before its program: ask the kernel for SIGKILL when the parent dies."""
    prctl = _prctl()
    parent = os.getpid()

    def arm() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was asked for
            os._exit(1)

    return arm


@functools.cache
def _prctl() -> Callable[..., int]:
    import ctypes  # loaded only by a caller that asks for it

    found: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    return found


def _pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(pid)
    except OSError:  # an older kernel, or a sandbox that forbids it: poll instead
        return None
    return fd


def _exited(process: subprocess.Popen[bytes]) -> bool:
    """Whether the program has exited, without reaping it (WNOWAIT): while it is not
    reaped its process group id stays reserved for killing what it left behind."""
    if not hasattr(os, "waitid") or not hasattr(os, "WNOWAIT"):  # macOS: reap it
        return process.poll() is not None
    try:
        return os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
        os.killpg(pgid, signal.SIGKILL)


def _not_started(start: float, error: str) -> Finished:
    return Finished(None, int((time.monotonic() - start) * 1000), b"", False, False, error)


def decode_tail(output: bytes, truncated: bool) -> str:
    """The kept bytes as text; a character cut in two at the start is dropped."""
    text = output.decode("utf-8", "replace")
    if truncated:
        text = "…" + text.lstrip("\ufffd")
    return text


# -- git ------------------------------------------------------------------------------
# git runs programs that its configuration names: hooks, filters, textconv, an external
# diff, an fsmonitor, a credential helper, an ssh command, a pager. None of those may
# come from a repository handrail looks at, from the user's git configuration, or from
# the system's. So git gets PATH, a HOME that is an empty folder of its own, the C
# locale, no system or global configuration, no system attributes, no prompt. The
# repository's own `.git/config` still applies; the callers deal with it (checks never
# let git read it where it could run something, git sources write it themselves).

# what a caller may add to git's environment, from the server's (the operator's)
SSH_VARIABLES = ("SSH_AUTH_SOCK", "GIT_SSH_COMMAND")
NETWORK_VARIABLES = (
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)

# given on every git command line: they outrank any configuration file git reads
SAFE_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "credential.helper=",
    "core.askPass=",
    "core.pager=cat",
    "submodule.recurse=false",
    "protocol.allow=never",
)

_home_lock = threading.Lock()
_home: str | None = None


def empty_home() -> str:
    """A folder of our own, empty, that git may take for the user's home."""
    global _home
    with _home_lock:
        if _home is None or not os.path.isdir(_home):
            _home = tempfile.mkdtemp(prefix="handrail-git-home-")
            atexit.register(shutil.rmtree, _home, True)
        return _home


def git_environment(
    protocols: str = "",
    *,
    passed: tuple[str, ...] = (),
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The whole environment git runs with: `environment` keeping TMPDIR and `passed`
    (when set in the server's environment), with git's isolation on top.
    `protocols`: the transports git may use (`file:https`; empty: none at all)."""
    source = os.environ if environ is None else environ
    home = empty_home()
    isolation = {
        "PATH": source.get("PATH", os.defpath),
        "HOME": home,
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "LANG": "C",
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "",
        "SSH_ASKPASS": "",
        "GIT_PAGER": "cat",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_NO_LAZY_FETCH": "1",
        # listed transports only; an empty list allows none (so never ext::, which runs a command)
        "GIT_ALLOW_PROTOCOL": protocols,
    }
    return environment(kept=("TMPDIR", *passed), added=isolation, environ=source)


def git_argv(*args: str) -> list[str]:
    """`git`, the settings no configuration may override, then `args`."""
    argv = ["git"]
    for setting in SAFE_CONFIG:
        argv += ["-c", setting]
    return [*argv, *args]
