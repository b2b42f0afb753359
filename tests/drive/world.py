"""A repository, the homes and the scripted model of one `handrail drive` test, the
driver run as the README runs it (the venv's `handrail`, by its full path) with the
pinned Claude Code as its agent (`--agent-command`)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from handrail.model.request import Request
from handrail.runs import Runs
from handrail.store import open_store
from tests.gate.real_harness.anthropic_model import MODEL, ScriptedModel
from tests.gate.real_harness.claude_code_world import CLAUDE, HANDRAIL, World

DRIVE_TIMEOUT = 180.0
CHECK = "test=grep -q discount src/cart.py"  # coding-task's verify check: passes once the discount is in


class DriveWorld(World):
    def __init__(self, root: Path, model: ScriptedModel) -> None:
        self.extra_env: dict[str, str] = {}  # more of the driver's environment (GITHUB_STEP_SUMMARY)
        super().__init__(root, model)
        self.url = "sqlite:///" + str(self.handrail_home / "handrail.db").lstrip("/")
        self.workflows = root / "workflows"
        self.workflows.mkdir()

    def env(self) -> dict[str, str]:
        # the harness's own configuration, passed through
        return {**super().env(), "ANTHROPIC_MODEL": MODEL, **self.extra_env}

    def drive_args(self, *args: str) -> list[str]:
        return [
            str(HANDRAIL),
            "drive",
            *args,
            "--agent-command",
            str(CLAUDE),
            "--workspace",
            str(self.repo),
            "--database",
            self.url,
            "--workflows",
            str(self.workflows),
            "--allow-commands",
            "--command",
            CHECK,
            "--approval-channels",
            "dashboard,cli",
        ]

    def drive(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`handrail drive ARGS` run to its end; its process group killed after."""
        process = subprocess.Popen(
            self.drive_args(*args),
            cwd=self.repo,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(timeout=DRIVE_TIMEOUT)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        assert not self.model.errors, self.model.errors
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)

    def add_workflow(self, workflow: dict[str, Any]) -> None:
        (self.workflows / f"{workflow['id']}.json").write_text(json.dumps(workflow))

    def record(self, run_id: str) -> dict[str, Any]:
        done = self.handrail("runs", "show", run_id, "--database", self.url, "--format", "json")
        assert done.returncode == 0, done.stderr
        found: dict[str, Any] = json.loads(done.stdout)
        return found

    def events(self, run_id: str, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.record(run_id)["events"] if e["type"] == kind]

    def approve(self, run_id: str) -> None:
        """A person approves on the dashboard (in-process, as the real-harness tests do)."""
        runs = Runs(lambda: open_store(self.url))
        try:
            run = runs.ledger.store.get(run_id)
            assert run is not None
            runs.decide(
                Request(owner=run.owner, scope="person"), run_id, "approve", person="ana", via="dashboard"
            )
        finally:
            runs.close()
