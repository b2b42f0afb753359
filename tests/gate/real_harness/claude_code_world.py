"""A real Claude Code session in a temporary git repository, the gate installed as the
README and docs/gate.md say, its model the scripted server (tests/gate/real_harness/
anthropic_model.py) and handrail its MCP server.

Everything lives under the test's temporary folder: HOME (Claude Code's own settings
and transcripts), HANDRAIL_HOME (the run store), the repository. Claude Code runs with
a minimal environment: no variable of the caller's, loopback only.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.gate.real_harness.anthropic_model import MODEL, ScriptedModel

ROOT = Path(__file__).resolve().parents[3]
CLAUDE = ROOT / "tests" / "harnesses" / "node_modules" / ".bin" / "claude"
VERSION = "2.1.332"
# the venv's own handrail, named by its full path as the README's `.venv/bin/handrail` is
HANDRAIL = Path(sys.executable).parent / "handrail"
PLUGIN = ROOT / "integrations" / "claude-code-plugin"
SESSION_TIMEOUT = 90.0
# the harness's PATH: the system's and node's, never the venv's (a harness started from a
# desktop or an editor has no venv on its PATH)
SYSTEM_PATH = os.pathsep.join(
    dict.fromkeys(
        [os.path.dirname(shutil.which("node") or "/usr/bin/node"), "/usr/local/bin", "/usr/bin", "/bin"]
    )
)
SOURCE = "def total(prices):\n    return sum(prices)\n"


def require_claude() -> None:
    """Skip, saying why, where Claude Code is not installed; under CI, fail."""
    missing = None
    if not CLAUDE.exists():
        missing = f"Claude Code is not installed at {CLAUDE} (run `npm ci` in tests/harnesses)"
    elif not HANDRAIL.exists():
        missing = f"no handrail program beside {sys.executable} (install the project into its venv)"
    if missing is None:
        return
    if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
        pytest.fail(f"CI must run the real-harness tests: {missing}")
    pytest.skip(missing)


@dataclass
class Session:
    """What one `claude -p` printed: its stream-json messages, and how it ended."""

    exit_code: int
    messages: list[dict[str, Any]]
    stderr: str

    @property
    def session_id(self) -> str:
        return str(self.messages[0]["session_id"])

    @property
    def result(self) -> dict[str, Any]:
        found = [m for m in self.messages if m.get("type") == "result"]
        assert found, f"no result message (exit {self.exit_code}): {self.stderr[-2000:]}"
        return found[-1]


class World:
    """The repository, the homes and the model server of one test. `plugin`: Claude Code
    loads handrail's plugin (`--plugin-dir`) for its MCP server and hooks, which call
    `handrail` from PATH as docs/gate.md says; else handrail is the MCP server of an
    `--mcp-config` file, named by its full path, and the hooks are `gate install`'s."""

    def __init__(self, root: Path, model: ScriptedModel, *, plugin: bool = False) -> None:
        self.root = root
        self.model = model
        self.plugin = plugin
        self.home = root / "home"
        self.handrail_home = root / "handrail-home"
        self.temporary = root / "tmp"  # Claude Code keeps its session's files under $TMPDIR
        self.repo = root / "shop"
        for folder in (self.home, self.handrail_home, self.temporary, self.repo):
            folder.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")
        (self.repo / "src").mkdir()
        (self.repo / "src" / "cart.py").write_text(SOURCE)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "cart: a total")
        self.mcp_config = root / "mcp.json"
        self.mcp_config.write_text(
            json.dumps({"mcpServers": {"handrail": {"command": str(HANDRAIL), "args": self.server_args()}}})
        )

    def server_args(self) -> list[str]:
        # the verify step's command check: passes once the agent has written the discount
        return ["start", "--allow-commands", "--command", "test=grep -q discount src/cart.py"]

    # -- the environment --------------------------------------------------------------
    def env(self) -> dict[str, str]:
        """What Claude Code (and so its hooks and MCP servers) runs with: nothing of the caller's."""
        env = {
            "PATH": SYSTEM_PATH,
            "HOME": str(self.home),
            "HANDRAIL_HOME": str(self.handrail_home),
            "TMPDIR": str(self.temporary),
            "LANG": "C.UTF-8",
            "ANTHROPIC_BASE_URL": self.model.url,
            "ANTHROPIC_API_KEY": "dummy",
            "API_TIMEOUT_MS": "600000",  # a loaded machine answers slowly: wait rather than retry
            "IS_SANDBOX": "1",  # the tests may run as root, where Claude Code refuses to bypass permissions
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "GIT_AUTHOR_NAME": "Agent",
            "GIT_AUTHOR_EMAIL": "agent@example.invalid",
            "GIT_COMMITTER_NAME": "Agent",
            "GIT_COMMITTER_EMAIL": "agent@example.invalid",
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        return env

    def harness_env(self) -> dict[str, str]:
        """The environment Claude Code runs with."""
        env = self.env()
        if self.plugin:  # the plugin's hooks and server call `handrail` from PATH
            env["PATH"] = str(HANDRAIL.parent) + os.pathsep + env["PATH"]
        return env

    def git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=self.repo, env=self.env(), capture_output=True, text=True, timeout=30
        )
        assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
        return done.stdout

    def handrail(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The venv's handrail, run by its full path in the repository (as the README says)."""
        return subprocess.run(
            [str(HANDRAIL), *args], cwd=self.repo, env=self.env(), capture_output=True, text=True, timeout=60
        )

    def instructions(self) -> str:
        """What handrail's MCP server, as Claude Code starts it here, tells a client in `initialize`."""
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        done = subprocess.run(
            [str(HANDRAIL), *self.server_args()],
            input=json.dumps(hello) + "\n",
            cwd=self.repo,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        answer = json.loads(done.stdout.splitlines()[0])
        return str(answer["result"]["instructions"])

    def install_gate(self) -> None:
        for harness in (["claude-code", "--scope", "project"], ["git"]):
            done = self.handrail("gate", "install", *harness)
            assert done.returncode == 0, done.stderr

    # -- the session --------------------------------------------------------------------
    def command(self, *args: str) -> list[str]:
        """`claude -p ARGS` printing stream-json, with the scripted model and handrail's MCP server."""
        return [
            str(CLAUDE),
            "-p",
            *args,
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            MODEL,
            # its own permission prompts would stop a headless session; the gate's hooks still run
            "--permission-mode",
            "bypassPermissions",
            *(
                ["--plugin-dir", str(PLUGIN)]
                if self.plugin
                else ["--strict-mcp-config", "--mcp-config", str(self.mcp_config)]
            ),
        ]

    def claude(self, *args: str, timeout: float = SESSION_TIMEOUT) -> Session:
        """`claude -p ARGS` in the repository, run to its end."""
        process = subprocess.Popen(
            self.command(*args),
            cwd=self.repo,
            env=self.harness_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its MCP server and hooks end with it
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            raise AssertionError(f"Claude Code did not end within {timeout}s: {stderr[-2000:]}") from None
        done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
        messages = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        assert not self.model.errors, self.model.errors
        return Session(done.returncode, messages, done.stderr)

    # -- what happened ----------------------------------------------------------------
    def log(self) -> list[str]:
        """The commit subjects, newest first."""
        return self.git("log", "--format=%s").splitlines()

    def run_record(self, run_id: str) -> dict[str, Any]:
        done = self.handrail("runs", "show", run_id, "--format", "json")
        assert done.returncode == 0, done.stderr
        record: dict[str, Any] = json.loads(done.stdout)
        return record

    def gate_events(self, run_id: str) -> list[dict[str, Any]]:
        return [e for e in self.run_record(run_id)["events"] if e["type"] == "gate"]

    def wait_for_gate_event(self, run_id: str, event: str, timeout: float = 30.0) -> dict[str, Any]:
        """The run's first gate record of `event`, once the gate has written it (for what
        Claude Code runs on its own schedule, such as ConfigChange from its file watcher)."""
        deadline = time.monotonic() + timeout
        while True:
            found = [e for e in self.gate_events(run_id) if e["event"] == event]
            if found:
                return found[0]
            assert time.monotonic() < deadline, f"no gate {event} event in run {run_id} within {timeout}s"
            time.sleep(0.1)


class Conversation:
    """One `claude -p --input-format stream-json` process, told one message at a time:
    each `tell` waits for the result of that message before the next is sent (as a
    person at the prompt would), so that `/compact` runs between two turns."""

    def __init__(self, world: World, *args: str) -> None:
        self.world = world
        self.messages: list[dict[str, Any]] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._process = subprocess.Popen(
            [*world.command("--input-format", "stream-json", *args)],
            cwd=world.repo,
            env=world.harness_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its MCP server and hooks end with it
        )
        self._stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _drain(self) -> None:
        assert self._process.stderr is not None
        self._stderr.extend(self._process.stderr)

    def tell(self, text: str, timeout: float = SESSION_TIMEOUT) -> list[dict[str, Any]]:
        """Send one user message; the messages printed until its result."""
        assert self._process.stdin is not None
        message = {"type": "user", "message": {"role": "user", "content": text}}
        self._process.stdin.write(json.dumps(message) + "\n")
        self._process.stdin.flush()
        deadline = time.monotonic() + timeout
        printed: list[dict[str, Any]] = []
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no result for {text!r} within {timeout}s") from None
            assert line is not None, (
                f"Claude Code ended before answering {text!r}: {''.join(self._stderr)[-2000:]}"
            )
            if not line.startswith("{"):
                continue
            found = json.loads(line)
            printed.append(found)
            self.messages.append(found)
            if found.get("type") == "result":
                return printed

    def close(self) -> None:
        """End the conversation (its input closed), and fail on a mistake of the script's."""
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=30)
        if self._process.stdout is not None:
            self._process.stdout.close()
        if self._process.stderr is not None:
            self._process.stderr.close()
        assert not self.world.model.errors, self.world.model.errors
