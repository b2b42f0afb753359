"""Running a program for a check: no shell, its own session, a hard time limit.

The program starts in a new session (so a new process group). At the time limit,
and as soon as the program itself exits, the whole group is killed, so nothing it
started is left running. Output (stdout and stderr together) is read as it comes
and only its last bytes are kept.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# after the program exits or is killed, how long to wait for the last of its output
# (a process that left the group could hold the pipe open for ever)
GRACE_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class Finished:
    exit_code: int | None  # None: it did not start, or never reported back
    duration_ms: int
    output: bytes  # the last bytes of its output
    truncated: bool  # output was longer than what is kept
    timed_out: bool
    error: str | None = None  # why it could not start


def child_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The server's environment without its own settings (a token, a database URL):
    a check needs PATH and the like, not the server's secrets."""
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items() if not k.startswith("HANDRAIL_")}


def run_program(
    argv: Sequence[str],
    cwd: str,
    timeout: float,
    keep_bytes: int,
    env: Mapping[str, str] | None = None,
) -> Finished:
    start = time.monotonic()
    try:
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            env=dict(env) if env is not None else child_environment(),
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
    tail = bytearray()
    total = 0
    timed_out = False
    ended_at: float | None = None  # when the program exited or was killed
    deadline = start + timeout
    stream = process.stdout
    os.set_blocking(stream.fileno(), False)
    reading = True
    pause = 0.001  # without a pidfd: how long to sleep before looking again, backing off
    exit_fd = _pidfd(process.pid)  # readable once the program exits (Linux), never reaped
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
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
                if ended_at is not None and (not reading or now - ended_at > GRACE_SECONDS):
                    break  # past the grace, something outside the group holds the pipe
                wait = 0.1 if ended_at is not None else max(0.0, min(0.25, deadline - now))
                if not reading and exit_fd is None:  # it closed its output; it is exiting, or not
                    time.sleep(min(wait, pause))
                    pause = min(pause * 2, 0.05)
                    continue
                for key, _ in selector.select(wait):
                    if key.fileobj is not stream:
                        continue  # the program exited: seen at the top of the loop
                    chunk = stream.read(65536)
                    if chunk is None:
                        continue
                    if not chunk:
                        reading = False
                        selector.unregister(stream)
                        continue
                    total += len(chunk)
                    tail += chunk
                    if len(tail) > keep_bytes:
                        del tail[: len(tail) - keep_bytes]
        finally:
            stream.close()
            if exit_fd is not None:
                os.close(exit_fd)
            # the leader is not reaped yet, so its group id cannot have been reused
            _kill_group(process.pid)
            process.wait()
            with _running_lock:
                _running.discard(process.pid)
    duration = int((time.monotonic() - start) * 1000)
    return Finished(
        exit_code=None if timed_out else process.returncode,
        duration_ms=duration,
        output=bytes(tail),
        truncated=total > len(tail),
        timed_out=timed_out,
    )


_running: set[int] = set()  # process groups of the checks running now (their leaders' pids)
_running_lock = threading.Lock()


def kill_running() -> None:
    """Kill every check's process group now: the server is stopping (SIGTERM, shutdown),
    and leaves nothing behind. Each check then ends as killed."""
    with _running_lock:
        groups = list(_running)
    for pgid in groups:
        _kill_group(pgid)


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
