"""`handrail audit`: every run event as one JSON line (who, what, run, step, channel,
its chain link), held against the store by `--verify`, which names a line changed or
left out; and `serve --audit-log FILE`, appending the same lines as events are written."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import pytest

from handrail.catalog import load_catalog
from handrail.cli import main
from handrail.service.core import Service
from tests.helpers.http import HttpServer
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

FLOW = {
    **build_feature(),
    "steps": [
        {"id": "plan", "title": "Plan", "prompt": "Plan it.", "requireConfirmation": True},
        {"id": "ship", "title": "Ship", "prompt": "Ship it."},
    ],
}
FIELDS = {"at", "runId", "seq", "event", "actor", "person", "stepId", "via", "prev", "hash"}


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def trail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """Two runs in the default database, one approved by alice on the command line; their
    audit trail written to a file."""
    write(tmp_path / "flows", FLOW)
    service = Service(load_catalog(tmp_path / "flows", bundled=False))
    try:
        runs = [service.call("workflow_start", {"workflowId": WORKFLOW_ID, "goal": g})["runId"] for g in "AB"]
        waiting = service.call(
            "workflow_continue", {"runId": runs[0], "stepId": "plan", "output": "Planned."}
        )
        assert waiting["status"] == "awaiting_approval", waiting
    finally:
        service.close()
    assert run_cli(capsys, "runs", "approve", runs[0], "--as", "alice")[0] == 0
    code, out, err = run_cli(capsys, "audit", "--since", "2000-01-01", "--format", "jsonl")
    assert code == 0, err
    (tmp_path / "audit.jsonl").write_text(out, "ascii")
    return tmp_path / "audit.jsonl"


def test_each_event_is_one_line_naming_who_what_run_step_and_channel(trail: Path) -> None:
    lines = [json.loads(text) for text in trail.read_text("ascii").splitlines()]
    assert lines and all(set(line) == FIELDS for line in lines)
    assert [line["event"] for line in lines].count("started") == 2
    approved = next(line for line in lines if line["event"] == "approved")
    assert (approved["person"], approved["via"], approved["stepId"]) == ("alice", "cli", "plan")
    first = [line for line in lines if line["runId"] == approved["runId"]]
    assert [line["seq"] for line in first] == list(range(1, len(first) + 1))
    assert all(b["prev"] == a["hash"] for a, b in itertools.pairwise(first))  # the store's chain


def test_the_trail_verifies_and_a_changed_or_dropped_line_is_named(
    trail: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "audit", "--verify", str(trail))
    assert code == 0 and "verified against the store" in out
    lines = trail.read_text("ascii").splitlines(keepends=True)
    at = next(i for i, text in enumerate(lines) if '"approved"' in text)
    changed = trail.with_name("changed.jsonl")
    changed.write_text("".join([*lines[:at], lines[at].replace('"alice"', '"mallory"'), *lines[at + 1 :]]))
    code, out, _ = run_cli(capsys, "audit", "--verify", str(changed))
    assert code == 1 and f"line {at + 1}: it is not what the store holds" in out, out
    dropped = trail.with_name("dropped.jsonl")
    dropped.write_text("".join([*lines[: at - 1], *lines[at:]]))
    code, out, _ = run_cli(capsys, "audit", "--verify", str(dropped))
    assert code == 1 and "lines skip from event" in out, out


def test_a_since_that_is_no_time_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "audit", "--since", "yesterday")
    assert code == 2 and "handrail audit: --since:" in err


@pytest.mark.slow
def test_serve_appends_the_lines_of_events_as_they_are_written(tmp_path: Path) -> None:
    write(tmp_path / "flows", FLOW)
    log = tmp_path / "audit.jsonl"
    database = f"sqlite:///{tmp_path / 'r.db'}"
    args = ("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", database)
    with HttpServer(*args, "--audit-log", str(log)) as http:
        started = http.rpc(
            "tools/call", {"name": "workflow_start", "arguments": {"workflowId": WORKFLOW_ID, "goal": "Go"}}
        )
        run_id = started["result"]["structuredContent"]["runId"]
        step = {"runId": run_id, "stepId": "plan", "output": "Planned."}
        http.rpc("tools/call", {"name": "workflow_continue", "arguments": step})
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and "awaiting_approval" not in log.read_text("ascii"):
            time.sleep(0.1)
    lines = [json.loads(text) for text in log.read_text("ascii").splitlines()]
    assert {line["runId"] for line in lines} == {run_id}
    assert [line["event"] for line in lines] == ["started", "awaiting_approval"], lines
    assert main(["audit", "--verify", str(log), "--database", database]) == 0
