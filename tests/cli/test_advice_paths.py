"""The commands a command advises can be typed as shown: after the README's venv
install `handrail` is not on PATH, so `handrail init` and `handrail start` at a
terminal name the venv's script by its full path (a bare `handrail` where it is the
one on PATH), and the command a client should spawn always by its full path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_first_contact import _read_until, at_a_terminal
from tests.helpers.server import clean_env

SCRIPT = Path(sys.executable).parent / "handrail"  # the console script the venv install made
TIMEOUT = 20.0

pytestmark = [
    pytest.mark.skipif(not SCRIPT.is_file(), reason=f"no console script at {SCRIPT}"),
    pytest.mark.slow,
]


def _env(tmp_path: Path, *, on_path: bool) -> dict[str, str]:
    environ = clean_env(tmp_path)
    folders = [f for f in os.environ.get("PATH", "").split(os.pathsep) if Path(f) != SCRIPT.parent]
    environ["PATH"] = os.pathsep.join([str(SCRIPT.parent)] * on_path + folders)
    return environ


@pytest.mark.parametrize("on_path", [False, True], ids=["venv-not-on-path", "on-path"])
def test_init_advises_commands_that_can_be_typed_as_shown(tmp_path: Path, on_path: bool) -> None:
    done = subprocess.run(
        [str(SCRIPT), "init"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(tmp_path, on_path=on_path),
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    typed = "handrail" if on_path else str(SCRIPT)
    advice = done.stdout.split("Next:\n")[1]
    assert f"  {typed} check " in advice and f"  {typed} walk my-first-workflow " in advice
    assert f"claude mcp add handrail -- {SCRIPT} start " in advice


def test_start_at_a_terminal_names_the_script_it_was_started_as(tmp_path: Path) -> None:
    command = [str(SCRIPT), "start", "--no-bundled"]
    with at_a_terminal(command, tmp_path, _env(tmp_path, on_path=False)) as (server, _):
        assert server.stderr is not None
        notice = _read_until(server.stderr.fileno(), b"stops.").decode()
        assert f"To try a workflow by hand:    {SCRIPT} walk coding-task" in notice
        assert f"claude mcp add handrail -- {SCRIPT} start" in notice
