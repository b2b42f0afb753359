"""How an installed hook names handrail: by the full path of the program that ran
`gate install`, never by a name looked up on PATH, because a harness runs its hooks
with its own PATH, which rarely holds the venv handrail was installed in.

Also the check that a hook's program still resolves (after an upgrade or a moved
venv), and the probe `gate doctor` runs: the hook's command line through `sh`, with a
minimal PATH, as a harness starts it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

NAME = "handrail"
MINIMAL_PATH = "/usr/bin:/bin"  # what a harness started from a desktop or a service has
PROBE_SECONDS = 30


def words() -> list[str]:
    """The running handrail as a hook calls it: the `handrail` script that runs (its
    absolute path, symlinks kept, so that a package manager's stable link survives an
    upgrade), else the one beside this interpreter, else the interpreter with `-m`."""
    running = sys.argv[0] if sys.argv else ""
    if os.path.basename(running) == NAME and _executable(running):
        return [os.path.abspath(running)]
    beside = Path(sys.executable).parent / NAME
    if sys.executable and _executable(str(beside)):
        return [str(beside)]
    return [sys.executable or "python3", "-m", NAME]


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def split(command: str) -> tuple[list[str], list[str]] | None:
    """A hook command line as (the program's words, the rest after them) when it runs
    handrail: `PATH/handrail ...` or `PYTHON -m handrail ...`; None otherwise."""
    try:
        found = shlex.split(command)
    except ValueError:
        found = command.split()
    if found and os.path.basename(found[0]) == NAME:
        return found[:1], found[1:]
    if len(found) >= 3 and found[1:3] == ["-m", NAME]:
        return found[:3], found[3:]
    return None


def points_nowhere(program: list[str]) -> str | None:
    """Why a hook's program would not start under a harness's minimal PATH, as a
    sentence naming it; None if it starts."""
    first = program[0]
    if os.path.sep not in first:
        if shutil.which(first, path=MINIMAL_PATH) is None:
            return f"`{first}` is looked up on PATH, and PATH={MINIMAL_PATH} finds none"
        return None
    if not _executable(first):
        return f"{first} is {'not executable' if os.path.exists(first) else 'not there'}"
    return None


def stale(command: str) -> str | None:
    """Why an installed hook command's handrail points nowhere; None if it does not."""
    found = split(command)
    why = points_nowhere(found[0]) if found else None
    return f"it pointed nowhere: {why}" if why else None


def probe(command: str, cwd: str | None = None) -> str | None:
    """Run a hook's command line as a harness would (`sh -c`, PATH=/usr/bin:/bin), asking
    only for its usage so that nothing is decided or recorded; why it did not answer,
    or None when it did."""
    env = dict(os.environ)
    env["PATH"] = MINIMAL_PATH
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", command + " --help"],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=PROBE_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"it did not answer within {PROBE_SECONDS} s"
    except OSError as exc:
        return f"/bin/sh could not run it ({exc})"
    if done.returncode == 0 and done.stdout.startswith("usage:"):
        return None
    said = " ".join((done.stderr or done.stdout).split())[:200]
    if done.returncode == 127:
        return f"it does not resolve with PATH={MINIMAL_PATH} (exit 127: {said})"
    return f"it did not answer (exit {done.returncode}: {said or 'no output'})"
