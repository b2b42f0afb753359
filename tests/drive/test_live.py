"""What `handrail drive` shows while it runs: at a terminal (a pseudo-terminal here), a
live line per step with its attempt, agent, time, cost and a bar; elsewhere, plain
lines only. The agent is a stand-in shell script, as in test_driver.py."""

from __future__ import annotations

import os
import pty
import re
import subprocess
from pathlib import Path

from tests.drive.test_driver import HANDRAIL, RESULT, TWO_STEPS
from tests.helpers.environment import child_env


def drive_at(tmp_path: Path, stderr: int | None) -> tuple[subprocess.Popen[bytes], list[str]]:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / TWO_STEPS.name).write_text(TWO_STEPS.read_text())
    script = tmp_path / "agent.sh"
    script.write_text(f"#!/bin/sh\necho '{RESULT}'\n")
    script.chmod(0o755)
    database = "sqlite:///" + str(tmp_path / "runs.db").lstrip("/")
    argv = [str(HANDRAIL), "drive", "two-steps", "--no-bundled", "--workflows", str(tmp_path / "workflows")]
    argv += ["--agent-command", str(script), "--workspace", str(tmp_path), "--database", database]
    argv += ["--attempts", "2"]
    env = {**child_env(tmp_path), "COLUMNS": "120", "TERM": "xterm"}
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=stderr)
    return process, argv


def test_at_a_terminal_each_step_has_a_live_line_with_its_attempt_agent_time_cost_and_bar(
    tmp_path: Path,
) -> None:
    leader, follower = pty.openpty()
    process, _ = drive_at(tmp_path, follower)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal's other end closed: the driver has exited
            break
        if not chunk:
            break
        shown += chunk
    process.wait(timeout=120)
    os.close(leader)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.decode("utf-8", "replace"))

    assert process.returncode == 1
    # the last drawing of the step's line: both attempts spent, $0.25 each, not accepted
    assert re.search(r"write .*━.* attempt 2/2 claude-code \d:\d\d:\d\d \$0\.5000 not accepted", text), text
    assert "handrail drive: step write: attempt 1 of 2, claude-code" in text  # the plain lines above it


def test_elsewhere_the_driver_writes_plain_lines_only(tmp_path: Path) -> None:
    process, _ = drive_at(tmp_path, subprocess.PIPE)
    _, err = process.communicate(timeout=120)
    lines = err.decode().splitlines()

    assert process.returncode == 1
    assert all(line.startswith("handrail drive: ") for line in lines), lines
    assert "\x1b" not in err.decode() and "━" not in err.decode()
