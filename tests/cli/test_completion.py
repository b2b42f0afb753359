"""`handrail completion SHELL`: scripts generated from the parser, which bash really
completes with, and which zsh and fish parse (where those shells are installed)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from handrail.cli import COMMANDS

# bash as it completes the last word of $2 (a command line, quoted as typed)
COMPLETE = (
    'source "$1"; eval "COMP_WORDS=($2)"; COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); '
    '_handrail; echo "${COMPREPLY[*]}"'
)


def script(shell: str, tmp_path: Path) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "completion", shell], capture_output=True, text=True, check=True
    )
    path = tmp_path / f"handrail.{shell}"
    path.write_text(done.stdout, encoding="utf-8")
    return path


def bash_completes(path: Path, line: str) -> list[str]:
    done = subprocess.run(["bash", "-c", COMPLETE, "bash", str(path), line], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.split()


def test_bash_completes_commands_verbs_and_options(tmp_path: Path) -> None:
    path = script("bash", tmp_path)
    assert bash_completes(path, "handrail ru") == ["runs"]
    assert set(bash_completes(path, "handrail ''")) >= set(COMMANDS)
    assert bash_completes(path, "handrail runs ap") == ["approve"]
    assert bash_completes(path, "handrail runs list --js") == ["--json"]
    assert bash_completes(path, "handrail list --max-f") == ["--max-file-size"]
    assert bash_completes(path, "handrail check workflows --for") == ["--format"]  # past a path


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_the_zsh_and_fish_scripts_parse(shell: str, tmp_path: Path) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed here (apt-get install {shell})")
    path = script(shell, tmp_path)
    done = subprocess.run([shell, "-n", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_fish_completes_a_verb(tmp_path: Path) -> None:
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed here (apt-get install fish)")
    path = script("fish", tmp_path)
    done = subprocess.run(
        ["fish", "-c", f"source {path}; complete -C 'handrail runs ap'"], capture_output=True, text=True
    )
    assert [line.split("\t")[0] for line in done.stdout.splitlines()] == ["approve"], done.stderr


def test_an_unknown_shell_is_a_usage_error() -> None:
    from handrail.cli import main

    assert main(["completion", "tcsh"]) == 2
