"""Where a real harness session plays an agent: a temporary home, HANDRAIL_HOME and git
repository, the gate installed in it as docs/gate.md says (`handrail gate install
HARNESS` and `gate install git`, run as this venv's `handrail`), and the harness run
as a process group that dies with the test."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from handrail.model.request import Request
from handrail.runs import Runs
from handrail.store import open_store
from tests.gate.runs import FIXTURE

ROOT = Path(__file__).resolve().parents[3]
HARNESSES = ROOT / "tests" / "harnesses" / "node_modules" / ".bin"
VENV_BIN = Path(sys.executable).parent
HANDRAIL = VENV_BIN / "handrail"  # the program as the README runs it: <venv>/bin/handrail
HARNESS_TIMEOUT = 120.0
GIT_PEOPLE = {
    "GIT_AUTHOR_NAME": "ana",
    "GIT_AUTHOR_EMAIL": "ana@example.com",
    "GIT_COMMITTER_NAME": "ana",
    "GIT_COMMITTER_EMAIL": "ana@example.com",
}


def require(program: Path) -> None:
    """Skip, saying why, where the harness or the venv's `handrail` is missing; under CI, fail."""
    if program.exists() and HANDRAIL.exists():
        return
    missing = (
        f"{program} is not installed (npm ci --prefix tests/harnesses)"
        if not program.exists()
        else f"{HANDRAIL} is not there: run the tests with the venv's python"
    )
    if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
        pytest.fail(f"CI must run the real-harness tests: {missing}")
    pytest.skip(missing)


@dataclass
class Ran:
    exit_code: int
    stdout: str
    stderr: str


class AgentWorld:
    """A home folder, HANDRAIL_HOME, the workflows and a git repository under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.handrail_home = self.home / ".handrail"
        self.workspace = root / "shop"
        self.workflows = root / "workflows"
        for folder in (self.home, self.handrail_home, self.workspace / "src", self.workflows):
            folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURE, self.workflows / FIXTURE.name)
        self.database = self.handrail_home / "handrail.db"
        self.url = "sqlite:///" + str(self.database).lstrip("/")
        self.cart = self.workspace / "src" / "cart.py"
        self.cart.write_text("PRICE = 10\n")
        self.git("init", "-q", "-b", "main")
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "first")

    def env(self) -> dict[str, str]:
        """The caller's environment without its handrail, harness or git settings, and
        without this venv on PATH, as a harness started by a person has it."""
        prefixes = ("HANDRAIL_", "CLAUDE_", "GEMINI_", "GOOGLE_", "CODEX_", "OPENAI_", "GIT_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
        path = os.environ.get("PATH", os.defpath).split(os.pathsep)
        env["PATH"] = os.pathsep.join(p for p in path if p and Path(p).resolve() != VENV_BIN.resolve())
        env.update(GIT_PEOPLE, HOME=str(self.home), HANDRAIL_HOME=str(self.handrail_home))
        return env

    def git(self, *args: str) -> Ran:
        done = subprocess.run(
            ["git", *args], cwd=self.workspace, env=self.env(), capture_output=True, text=True, timeout=60
        )
        return Ran(done.returncode, done.stdout, done.stderr)

    def commits(self) -> list[str]:
        return self.git("log", "--format=%s").stdout.split()

    def handrail(self, *args: str) -> Ran:
        done = subprocess.run(
            [str(HANDRAIL), *args],
            cwd=self.workspace,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        return Ran(done.returncode, done.stdout, done.stderr)

    def install_gate(self, harness: str) -> str:
        """`<venv>/bin/handrail gate install HARNESS` and `gate install git`, as docs/gate.md says."""
        shown = []
        for name in (harness, "git"):
            installed = self.handrail("gate", "install", name)
            assert installed.exit_code == 0, installed.stderr
            shown.append(installed.stdout)
        return "".join(shown)

    def server_args(self) -> list[str]:
        """handrail as the harness's MCP server: this store, the fixture's workflows only. A
        person approves on the dashboard (the command line is tried first, and refused):
        headless harnesses answer an elicitation at once, `codex exec` with a decline."""
        return [
            "start",
            "--no-bundled",
            "--workflows",
            str(self.workflows),
            "--database",
            self.url,
            "--approval-channels",
            "dashboard,cli",
        ]

    def approve(self, run_id: str) -> None:
        """The person approves. The command line is a channel the agent shares, so while
        the gate watches the run it decides nothing (spec/runs.md, "Presence"); the person
        then decides where the agent cannot, as the dashboard does with their token."""
        refused = self.handrail("runs", "approve", run_id, "--database", self.url, "--as", "ana")
        assert refused.exit_code != 0 and "passkey" in refused.stderr, refused.stderr
        runs = Runs(lambda: open_store(self.url))
        run = runs.ledger.store.get(run_id)
        assert run is not None
        runs.decide(
            Request(owner=run.owner, scope="person"), run_id, "approve", person="ana", via="dashboard"
        )

    def record(self, run_id: str) -> dict[str, Any]:
        shown = self.handrail("runs", "show", run_id, "--database", self.url, "--format", "json")
        assert shown.exit_code == 0, shown.stderr
        found: dict[str, Any] = json.loads(shown.stdout)
        return found

    def only_run(self) -> str:
        listed = self.handrail("runs", "list", "--database", self.url, "--format", "json")
        assert listed.exit_code == 0, listed.stderr
        runs = json.loads(listed.stdout)
        runs = runs.get("runs", runs) if isinstance(runs, dict) else runs
        assert len(runs) == 1, runs
        run_id: str = runs[0]["runId"] if "runId" in runs[0] else runs[0]["id"]
        return run_id


def run_harness(argv: list[str], env: dict[str, str], cwd: Path, stdin: str = "") -> Ran:
    """A harness run to its end in a process group of its own, which is killed after,
    so the MCP servers and hooks it started die with it too."""
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(stdin, timeout=HARNESS_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        stderr += f"\n(killed after {HARNESS_TIMEOUT:.0f} s)"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    return Ran(process.returncode, stdout, stderr)


def gate_events(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in record["events"] if e["type"] == "gate"]
