"""Colour only for a person at a terminal: `handrail check` and `handrail list` colour a
problem's severity when their output is a terminal, and never into a pipe or under
NO_COLOR."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.server import clean_env

RED = "\033[31merror\033[0m"


def broken(tmp_path: Path) -> Path:
    path = tmp_path / "broken.json"
    path.write_text('{"id": oops}\n', encoding="utf-8")
    return path


def at_a_terminal(args: list[str], env: dict[str, str], cwd: Path) -> str:
    """What `handrail ARGS` writes to stdout and stderr, both a terminal."""
    controller, terminal = pty.openpty()
    done = subprocess.Popen(
        [sys.executable, "-m", "handrail", *args], stdout=terminal, stderr=terminal, env=env, cwd=cwd
    )
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal's other end closed: the command is done
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    assert done.wait(60) in (0, 1, 2)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize("command", ["check", "list"])
def test_a_problems_severity_is_coloured_at_a_terminal_only(command: str, tmp_path: Path) -> None:
    path = broken(tmp_path)
    args = ["check", str(path)] if command == "check" else ["list", "--no-bundled", "--workflows", str(path)]
    env = {k: v for k, v in clean_env(tmp_path).items() if k not in ("NO_COLOR", "TERM")}
    assert RED in at_a_terminal(args, env, tmp_path)
    assert "\033[" not in at_a_terminal(args, env | {"NO_COLOR": "1"}, tmp_path)
    assert "\033[" not in at_a_terminal(args, env | {"TERM": "dumb"}, tmp_path)
    piped = subprocess.run(
        [sys.executable, "-m", "handrail", *args], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert "error H001" in piped.stdout + piped.stderr and "\033[" not in piped.stdout + piped.stderr
