"""The after-tool check's "nothing changed" without git (spec/gate.md): a real `handrail
serve` whose `git` is a program that logs each call answers a tool call that changed
nothing from its stat fingerprint, running no git, and still finds each change the
shortcut suite makes, however it is made, the fingerprint taken first."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from handrail.gate.fingerprint import COARSE_MARGIN_NS, FINE_MARGIN_NS
from tests.gate.runs import GateWorld, claude_input
from tests.gate.test_gate_http import hook, serving
from tests.gate.test_gate_http_effects import CART, IDENTITY, bash, planning, repository
from tests.helpers.http import HttpServer

REAL_GIT = shutil.which("git") or "git"


class Logged:
    """A `git` first on the server's PATH that appends each call to a log, then runs git."""

    def __init__(self, folder: Path) -> None:
        self.log = folder / "git.log"
        self.log.touch()
        program = folder / "bin" / "git"
        program.parent.mkdir()
        program.write_text(f'#!/bin/sh\necho "$*" >> "{self.log}"\nexec "{REAL_GIT}" "$@"\n')
        program.chmod(0o755)
        self.path = f"{program.parent}{os.pathsep}{os.environ.get('PATH', '')}"

    def calls(self) -> int:
        return len(self.log.read_text().splitlines())


class Served:
    def __init__(self, world: GateWorld, server: HttpServer, git: Logged) -> None:
        self.world, self.server, self.git = world, server, git

    def settled(self) -> None:
        """What the test did last is older than the racy margin, and the fingerprint
        taken: a full check, then a call that runs no git."""
        newest = max(os.lstat(p).st_ctime_ns for p in self.world.workspace.rglob("*"))
        margin = COARSE_MARGIN_NS if newest % 1_000_000_000 == 0 else FINE_MARGIN_NS
        time.sleep(margin / 1e9 + 0.1)
        assert hook(self.server, bash(self.world, "PreToolUse")).content == b""
        before = self.git.calls()
        assert hook(self.server, bash(self.world, "PostToolUse")).content == b""
        assert self.git.calls() == before, "a call that changed nothing ran git"

    def prompt(self) -> None:
        """The person's turn: what they changed is the baseline's."""
        assert hook(self.server, claude_input(self.world, "UserPromptSubmit", prompt="go")).status_code == 200

    def found(self, target: str) -> None:
        """The next after-tool check refuses, naming `target`, and records it."""
        said = hook(self.server, bash(self.world, "PostToolUse")).json()
        assert said["decision"] == "block" and target in said["reason"], said
        assert target in str([e for e in self.world.events() if e["type"] == "violation"][-1])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the module: a run at its plan step (code edits forbidden); each test
    leaves the workspace as the gate put it back."""
    root = tmp_path_factory.mktemp("fingerprint")
    world = GateWorld(root)
    repository(world, world.workspace)
    git = Logged(root)
    with serving(world, env={"PATH": git.path}) as server:
        planning(world, server)
        yield Served(world, server, git)
    world.close()


def run(served: Served, command: str) -> None:
    env = served.world.env() | IDENTITY
    subprocess.run(["bash", "-c", command], cwd=served.world.workspace, env=env, check=True, timeout=60)


def test_a_tool_call_that_changed_nothing_runs_no_git_and_one_that_changed_a_file_does(
    served: Served,
) -> None:
    served.settled()
    before = served.git.calls()
    (served.world.workspace / "docs" / "plan.md").write_text("# Plan\n\n1. the discount\n")  # allowed
    assert hook(served.server, bash(served.world, "PostToolUse")).content == b""
    assert served.git.calls() > before  # the full check ran, and took the change in


def same_size(cart: Path) -> None:
    cart.write_text(CART.replace("sum", "max"))


def touched_back(cart: Path) -> None:
    was = os.stat(cart)
    same_size(cart)
    os.utime(cart, ns=(was.st_atime_ns, was.st_mtime_ns))  # only the ctime says it changed


def touch_d(cart: Path) -> None:
    was = os.stat(cart)
    same_size(cart)
    seconds, ns = divmod(was.st_mtime_ns, 1_000_000_000)
    subprocess.run(["touch", "-d", f"@{seconds}.{ns:09d}", str(cart)], check=True)
    assert os.stat(cart).st_mtime_ns == was.st_mtime_ns


CHANGES: dict[str, Callable[[Path], None]] = {
    "same size, same second": same_size,
    "same size, mtime put back by os.utime": touched_back,
    "same size, mtime put back by touch -d": touch_d,
}
SHELL = {
    "shell redirection": ("printf '# more\\n' >> src/cart.py", "src/cart.py"),
    "a script": ("python3 -c \"open('src/cart.py', 'w').write('x = 1\\n')\"", "src/cart.py"),
    "a link": ("ln -s cart.py src/alias.py", "src/alias.py"),
    "a link made the file": ("ln -sf ../docs/plan.md src/cart.py", "src/cart.py"),
    "a new folder": ("mkdir -p src/deep/er && echo 1 > src/deep/er/x.py", "src/deep/er/x.py"),
    "git update-ref": (
        "git update-ref refs/heads/main $(git commit-tree 'HEAD^{tree}' -p HEAD -m x)",
        "refs/heads/main",
    ),
    "git config core.hooksPath": ("git config core.hooksPath /dev/null", "core.hookspath"),
    "a staged change": (
        "git update-index --cacheinfo 100644,$(echo x | git hash-object -w --stdin),src/cart.py",
        "src/cart.py",
    ),
    "an ignore rule taken back": ("printf '' > .git/info/exclude", "build/out.py"),
}
# what the person did before the fingerprint was taken
BEFORE = {
    "an ignore rule taken back": "echo build/ > .git/info/exclude && mkdir build && echo 1 > build/out.py"
}


@pytest.mark.parametrize("how", sorted(CHANGES))
def test_a_file_changed_in_place_after_the_fingerprint_is_found_over_http(served: Served, how: str) -> None:
    served.settled()
    cart = served.world.workspace / "src" / "cart.py"
    CHANGES[how](cart)
    served.found("src/cart.py")
    assert cart.read_text() == CART


@pytest.mark.parametrize("how", sorted(SHELL))
def test_a_change_made_by_a_shell_command_after_the_fingerprint_is_found_over_http(
    served: Served, how: str
) -> None:
    command, target = SHELL[how]
    if how in BEFORE:
        run(served, BEFORE[how])
        served.prompt()
    served.settled()
    run(served, command)
    served.found(target)
    assert (served.world.workspace / "src" / "cart.py").read_text() == CART


def test_a_prompt_after_the_fingerprint_takes_the_persons_change_in(served: Served) -> None:
    served.settled()
    cart = served.world.workspace / "src" / "cart.py"
    cart.write_text(CART + "# the person's\n")
    served.prompt()
    served.settled()  # the person's change is the baseline's now
    assert cart.read_text() == CART + "# the person's\n"
    cart.write_text(CART)
    served.found("src/cart.py")
    assert cart.read_text() == CART + "# the person's\n"
