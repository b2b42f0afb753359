"""A workspace as a cunning agent finds it (issue 34's table): a git repository with
the gate installed exactly as `handrail gate install claude-code --scope project`
and `handrail gate install git` write it, a run active, and each tool call tried as
Claude Code makes it: the installed PreToolUse hook fed the harness's JSON, the
command then really run in bash when the hook lets it, then the PostToolUse hook."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.gate.runs import GateWorld, Ran, as_the_harness_runs, claude_input

PROGRAMS = os.path.dirname(sys.executable)  # where this venv's `handrail` is
IDENTITY = {
    "GIT_AUTHOR_NAME": "agent",
    "GIT_AUTHOR_EMAIL": "agent@example.invalid",
    "GIT_COMMITTER_NAME": "agent",
    "GIT_COMMITTER_EMAIL": "agent@example.invalid",
}
CART = "def total(items):\n    return sum(items)\n"
PLAN = "# Plan\n"


@dataclass
class Tried:
    pre: Ran
    ran: subprocess.CompletedProcess[str] | None
    post: Ran | None

    @property
    def refused_before(self) -> bool:
        return "permissionDecision" in self.pre.stdout

    @property
    def undone(self) -> bool:
        return self.post is not None and '"decision":"block"' in self.post.stdout.replace(" ", "")


class Shop:
    """The world's workspace as a repository with the gate installed and a run."""

    def __init__(self, world: GateWorld) -> None:
        self.world = world
        self.path = world.workspace
        (self.path / "src").mkdir()
        (self.path / "docs").mkdir()
        (self.path / "src" / "cart.py").write_text(CART)
        (self.path / "docs" / "plan.md").write_text(PLAN)
        (self.path / ".gitignore").write_text("build/\n")
        self.git("init", "-q", "-b", "main")
        self.git("add", "-A")
        self.git("commit", "-qm", "the shop")
        self.handrail("gate", "install", "claude-code", "--scope", "project")
        self.handrail("gate", "install", "git")
        self.git("add", "-A")
        self.git("commit", "-qm", "the gate's settings")
        self.hooks = json.loads((self.path / ".claude" / "settings.json").read_text())["hooks"]

    def env(self) -> dict[str, str]:
        env = self.world.env()
        env["PATH"] = PROGRAMS + os.pathsep + env.get("PATH", "")
        env.update(IDENTITY)
        return env

    def git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=self.path, env=self.env(), capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def handrail(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "handrail", *args],
            cwd=self.path,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return done.stdout

    def bash(self, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command], cwd=self.path, env=self.env(), capture_output=True, text=True, timeout=60
        )

    def hook(self, event: str, **fields: Any) -> Ran:
        """The installed hook of `event` run as Claude Code runs it."""
        command = self.hooks[event][0]["hooks"][0]["command"]
        return as_the_harness_runs(self.world, command, claude_input(self.world, event, **fields), PROGRAMS)

    def prompt(self) -> Ran:
        return self.hook("UserPromptSubmit", prompt="go on")

    def tool(self, name: str, tool_input: dict[str, Any], act: Any) -> Tried:
        """One tool call: PreToolUse, the call itself when allowed (`act()`), PostToolUse."""
        pre = self.hook("PreToolUse", tool_name=name, tool_input=tool_input)
        if "permissionDecision" in pre.stdout:
            return Tried(pre, None, None)
        ran = act()
        post = self.hook("PostToolUse", tool_name=name, tool_input=tool_input, tool_response={})
        return Tried(pre, ran, post)

    def shell(self, command: str) -> Tried:
        return self.tool("Bash", {"command": command}, lambda: self.bash(command))

    def write(self, path: str, content: str) -> Tried:
        def act() -> subprocess.CompletedProcess[str]:
            target = self.path / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
            return subprocess.CompletedProcess(["Write"], 0, "", "")

        return self.tool("Write", {"file_path": str(self.path / path), "content": content}, act)

    def stop(self) -> Ran:
        return self.hook("Stop", stop_hook_active=False)

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").strip()

    def refs(self) -> str:
        """Every ref but the gate's own, as git lists them."""
        return "".join(
            line + "\n"
            for line in self.git("for-each-ref", "--format=%(objectname) %(refname)").splitlines()
            if " refs/handrail/" not in line
        )

    def violations(self) -> list[dict[str, Any]]:
        return [e for e in self.world.events() if e["type"] == "violation"]

    def kept(self) -> list[str]:
        return self.git("for-each-ref", "--format=%(refname)", "refs/handrail/").split()


def files(folder: Path) -> dict[str, bytes]:
    """Every file below `folder` (but .git) with its bytes, a link as its target."""
    found: dict[str, bytes] = {}
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = Path(root) / name
            key = str(path.relative_to(folder))
            found[key] = b"-> " + os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
    return found


def hooks_folder(folder: Path) -> dict[str, bytes]:
    hooks = folder / ".git" / "hooks"
    return {p.name: p.read_bytes() for p in sorted(hooks.iterdir()) if p.is_file()}
