"""A real run store in a temporary HANDRAIL_HOME, with the gate fixture's run put in
the state a test needs, and `handrail gate` run as the harness would run it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from handrail.catalog import load_catalog
from handrail.model.request import LOCAL, Request
from handrail.runs import Runs
from handrail.store import open_store

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "spec" / "cases" / "gate" / "gate-fixture.json"
STEPS = ("plan", "implement", "test", "release")


@dataclass
class Ran:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


class GateWorld:
    """A home folder, HANDRAIL_HOME, a workspace and the run store, all under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.handrail_home = self.home / ".handrail"
        self.workspace = root / "shop"
        self.workflows = root / "workflows"
        for folder in (self.home, self.handrail_home, self.workspace, self.workflows):
            folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURE, self.workflows / FIXTURE.name)
        self.database = self.handrail_home / "handrail.db"
        self.url = "sqlite:///" + str(self.database).lstrip("/")
        self._runs: Runs | None = None
        self.run_id: str | None = None

    @property
    def runs(self) -> Runs:
        if self._runs is None:
            self._runs = Runs(lambda: open_store(self.url))
        return self._runs

    def snapshot(self) -> Any:
        return load_catalog(self.workflows, bundled=False).snapshot()

    def start(self, at: str = "plan", goal: str = "Add a discount to the cart") -> str:
        """A run of the fixture, moved on until `at` is its current step."""
        started = self.runs.start(LOCAL, self.snapshot().get("gate-fixture"), goal, str(self.workspace), {})
        self.run_id = started["runId"]
        for step in STEPS[: STEPS.index(at)]:
            self.complete(step)
        return self.run_id

    def complete(self, step: str) -> dict[str, Any]:
        assert self.run_id is not None
        return self.runs.continue_(  # type: ignore[return-value]  # no approval is asked here
            LOCAL, self.snapshot(), self.run_id, step, f"{step} done: the work is written up.", None
        )

    def approve(self) -> None:
        assert self.run_id is not None
        self.runs.decide(LOCAL, self.run_id, "approve", person="ana", comment=None)

    def approve_as_person(self, run_id: str, person: str = "ana") -> None:
        """A person's approval through a channel the agent does not share (the dashboard
        with their token): while the gate watches a run, `handrail runs approve` needs
        their passkey (spec/runs.md, "Presence")."""
        run = self.runs.ledger.store.get(run_id)
        assert run is not None
        self.runs.decide(
            Request(owner=run.owner, scope="person"), run_id, "approve", person=person, via="dashboard"
        )

    def events(self) -> list[dict[str, Any]]:
        assert self.run_id is not None
        store = open_store(self.url)
        try:
            return [e.as_dict() for e in store.events(self.run_id)]
        finally:
            store.close()

    def gate_events(self) -> list[dict[str, Any]]:
        return [e for e in self.events() if e["type"] == "gate"]

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HANDRAIL_", "CLAUDE_"))}
        env["HOME"] = str(self.home)
        env["HANDRAIL_HOME"] = str(self.handrail_home)
        env["PYTHONPATH"] = str(ROOT / "src")
        return env

    def gate(self, event: str, stdin: bytes | str = b"", *args: str, cwd: Path | None = None) -> Ran:
        """`handrail gate EVENT ARGS`, a process of its own, as the harness starts it."""
        data = stdin.encode() if isinstance(stdin, str) else stdin
        done = subprocess.run(
            gate_command(event, *args),
            input=data,
            capture_output=True,
            cwd=cwd or self.workspace,
            env=self.env(),
            timeout=60,
        )
        return Ran(done.returncode, done.stdout.decode(), done.stderr.decode())

    def close(self) -> None:
        if self._runs is not None:
            self._runs.close()


def started_over_mcp(world: GateWorld, server: Any) -> str:
    """A run of the fixture workflow in the world's workspace, started by an agent through
    a real server (tests.helpers.server.Server), as a session would: its id."""
    started = server.call(
        "workflow_start",
        {
            "workflowId": "gate-fixture",
            "goal": "Add a discount to the cart",
            "workspace": str(world.workspace),
        },
    )
    run_id: str = started["structuredContent"]["runId"]
    return run_id


def as_the_harness_runs(world: GateWorld, command: str, stdin: str, program_dir: str) -> Ran:
    """An installed hook's command line run as a harness runs it: through `sh -c` in the
    workspace, with `program_dir` (where `handrail` is) first on PATH."""
    env = world.env()
    env["PATH"] = program_dir + os.pathsep + env.get("PATH", "")
    done = subprocess.run(
        ["sh", "-c", command],
        input=stdin,
        cwd=world.workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def gate_command(event: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "handrail", "gate", event, *args]


def claude_input(world: GateWorld, event: str, **fields: Any) -> str:
    body: dict[str, Any] = {
        "session_id": "s-1",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(world.workspace),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }
    return json.dumps(body)
