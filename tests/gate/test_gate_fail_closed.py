"""A hook that cannot judge refuses while a run is or may be active (spec/gate.md, "When
the gate cannot judge"): input nested too deep, a full disk, a store that cannot be
read or is held locked, a bug planted in the decision and in the refusal itself. Each
is played through a real `handrail gate` process, as the harness runs it, against a
real SQLite store; the full disk is a real tmpfs of a few hundred KiB."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.gate import outages
from handrail.model.request import LOCAL
from tests.gate.runs import GateWorld, claude_input, gate_command


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A real file system of 1 MiB (tmpfs), taken away after the test."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"a tmpfs cannot be mounted here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def fill(folder: Path) -> None:
    """Write to `folder` until its file system has no byte left."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError as exc:
        assert exc.errno == 28  # ENOSPC
    finally:
        os.close(fd)


def on_disk(world: GateWorld, disk: Path) -> None:
    world.database = disk / "handrail.db"
    world.url = "sqlite:///" + str(world.database).lstrip("/")


def edit(world: GateWorld, path: str = "src/cart.py") -> str:
    return claude_input(world, "PreToolUse", tool_name="Edit", tool_input={"file_path": path})


def read(world: GateWorld) -> str:
    return claude_input(world, "PreToolUse", tool_name="Read", tool_input={"file_path": "src/cart.py"})


def denied(ran: object) -> str:
    """The reason of a PreToolUse deny, as Claude Code reads it."""
    out = json.loads(ran.stdout)  # type: ignore[attr-defined]
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny", ran
    assert ran.exit_code == 0  # type: ignore[attr-defined]
    return str(out["hookSpecificOutput"]["permissionDecisionReason"])


def deep(depth: int) -> str:
    """A JSON value nested `depth` deep, as text: Python's own writer cannot write it."""
    return '{"payload":' + '{"a":[' * (depth // 2) + '"leaf"' + "]}" * (depth // 2) + "}"


def nested(world: GateWorld, event: str, depth: int, field: str, **fields: object) -> str:
    return claude_input(world, event, **{field: "@deep@"}, **fields).replace('"@deep@"', deep(depth))


@pytest.mark.parametrize("depth", [990, 100_000])
def test_an_mcp_call_nested_too_deep_is_refused_while_a_run_is_active(world: GateWorld, depth: int) -> None:
    world.start("plan")
    call = nested(world, "PreToolUse", depth, "tool_input", tool_name="mcp__shop__deploy")
    ran = world.gate("pre-tool-use", call)
    assert "nests too deep" in denied(ran)
    assert "Traceback" not in ran.stderr


def test_input_nested_too_deep_with_no_run_is_the_non_blocking_error(world: GateWorld) -> None:
    call = nested(world, "PreToolUse", 100_000, "tool_input", tool_name="mcp__shop__deploy")
    ran = world.gate("pre-tool-use", call)
    assert (ran.exit_code, ran.stdout) == (1, "")
    assert "nests too deep" in ran.stderr and "Traceback" not in ran.stderr


def test_a_stop_nested_too_deep_is_blocked_while_a_run_is_active(world: GateWorld) -> None:
    world.start("plan")
    stop = nested(world, "Stop", 100_000, "extra", stop_hook_active=False)
    ran = world.gate("stop", stop)
    assert ran.exit_code == 0 and ran.json()["decision"] == "block"


def test_a_refusal_on_a_full_disk_still_refuses_and_is_recorded_once_there_is_room(
    world: GateWorld, disk: Path
) -> None:
    on_disk(world, disk)
    world.start("plan")
    world.close()
    assert world.gate("pre-tool-use", read(world), "--database", world.url).exit_code == 0
    keeper = sqlite3.connect(world.database)  # a server keeping the store open: its log files stay
    try:
        keeper.execute("SELECT COUNT(*) FROM runs").fetchall()
        fill(disk)
        ran = world.gate("pre-tool-use", edit(world), "--database", world.url)
        assert "does not allow edit:src/cart.py" in denied(ran)
        assert "database or disk is full" in ran.stderr and "kept to be written later" in ran.stderr
        [kept] = [json.loads(line) for line in (world.handrail_home / outages.NAME).read_text().splitlines()]
        assert kept["run"] == world.run_id and kept["data"]["decision"] == "deny"
        assert not [e for e in world.gate_events() if e.get("decision") == "deny"]
        (disk / "filler").unlink()
        assert world.gate("pre-tool-use", read(world), "--database", world.url).exit_code == 0
    finally:
        keeper.close()
    [written] = [e for e in world.gate_events() if e.get("decision") == "deny"]
    assert written["action"] == "edit:src/cart.py" and written["spooled"] is True
    assert not (world.handrail_home / outages.NAME).exists()


def test_a_full_disk_that_stops_even_reading_refuses_where_the_gate_saw_a_run(
    world: GateWorld, disk: Path
) -> None:
    on_disk(world, disk)
    world.start("plan")
    world.close()
    assert world.gate("pre-tool-use", read(world), "--database", world.url).exit_code == 0
    fill(disk)
    for options in ([], ["--on-error", "allow"]):  # allow is no longer possible where a run is active
        ran = world.gate("pre-tool-use", edit(world, "docs/plan.md"), "--database", world.url, *options)
        assert "cannot judge" in denied(ran) and "a run is or may be active" in ran.stderr


def test_a_store_replaced_by_a_folder_refuses_where_a_run_was_seen_and_nowhere_else(
    world: GateWorld, tmp_path: Path
) -> None:
    world.start("plan")
    assert world.gate("pre-tool-use", read(world)).exit_code == 0
    world.close()
    for suffix in ("", "-wal", "-shm"):
        Path(str(world.database) + suffix).unlink(missing_ok=True)
    world.database.mkdir()  # no file can be read there, whoever runs the hook
    ran = world.gate("pre-tool-use", edit(world, "docs/plan.md"))
    assert "cannot judge" in denied(ran)
    elsewhere = tmp_path / "other-project"
    elsewhere.mkdir()
    body = json.loads(edit(world))
    body["cwd"] = str(elsewhere)
    allowed = world.gate("pre-tool-use", json.dumps(body), cwd=elsewhere)
    assert allowed.exit_code == 0 and "allowing" in allowed.json()["systemMessage"]
    shutil.rmtree(world.database)


def test_a_run_that_ended_takes_its_mark_away(world: GateWorld) -> None:
    world.start("plan")
    assert world.gate("pre-tool-use", read(world)).exit_code == 0
    marks = world.handrail_home / "gate-active"
    assert [mark.read_text().strip() for mark in marks.iterdir()] == [str(world.workspace)]
    world.runs.abandon(LOCAL, world.run_id or "", "done")
    assert world.gate("pre-tool-use", read(world)).exit_code == 0
    assert list(marks.iterdir()) == []


def test_a_run_row_moved_on_with_sqlite3_does_not_move_the_gate_on(world: GateWorld) -> None:
    world.start("plan")
    assert world.gate("pre-tool-use", read(world)).exit_code == 0
    world.close()
    with sqlite3.connect(world.database) as db:
        (text,) = db.execute("SELECT position FROM runs WHERE id = ?", (world.run_id,)).fetchone()
        position = json.loads(text)
        position["step"] = {**position["step"], "id": "implement", "title": "Implement"}
        db.execute("UPDATE runs SET position = ? WHERE id = ?", (json.dumps(position), world.run_id))
    db.close()
    ran = world.gate("pre-tool-use", edit(world))  # what step 'implement' would allow
    assert "cannot judge" in denied(ran)
    assert f"run {world.run_id} was changed outside handrail: position is not as sealed" in ran.stderr


CRASH = """
import handrail.runs.gate_decision as gate_decision

def crash(*args, **kwargs):
    raise RuntimeError("a bug in the decision")

gate_decision.decide = crash
"""
CRASH_TWICE = (
    CRASH
    + """
import handrail.gate.hook_failures as failures

def also(*args, **kwargs):
    raise MemoryError("and a bug in the refusal")

failures.store_failed = also
"""
)


def with_bug(world: GateWorld, tmp_path: Path, bug: str, stdin: str) -> subprocess.CompletedProcess[str]:
    """The hook run as the harness runs it, with `bug` planted in it (a sitecustomize,
    which the interpreter runs before the hook)."""
    planted = tmp_path / "planted"
    planted.mkdir(exist_ok=True)
    (planted / "sitecustomize.py").write_text(bug)
    env = world.env()
    env["PYTHONPATH"] = f"{planted}{os.pathsep}{env['PYTHONPATH']}"
    return subprocess.run(
        gate_command("pre-tool-use"),
        input=stdin,
        capture_output=True,
        text=True,
        cwd=world.workspace,
        env=env,
    )


def test_a_bug_in_the_decision_refuses_even_a_read_while_a_run_is_active(
    world: GateWorld, tmp_path: Path
) -> None:
    world.start("plan")
    for asked in (edit(world), read(world)):
        ran = with_bug(world, tmp_path, CRASH, asked)
        out = json.loads(ran.stdout)["hookSpecificOutput"]
        assert (ran.returncode, out["permissionDecision"]) == (0, "deny"), ran.stderr
        assert "a bug in the decision" in out["permissionDecisionReason"]


def test_a_bug_in_the_refusal_too_is_still_a_refusal_the_harness_reads_as_one(
    world: GateWorld, tmp_path: Path
) -> None:
    world.start("plan")
    ran = with_bug(world, tmp_path, CRASH_TWICE, read(world))
    assert ran.returncode == 2 and ran.stdout == ""  # every harness's blocking error
    assert "cannot judge this" in ran.stderr and "and a bug in the refusal" in ran.stderr


def test_a_bug_with_no_run_active_stops_nothing(world: GateWorld, tmp_path: Path) -> None:
    ran = with_bug(world, tmp_path, CRASH, edit(world))
    assert ran.returncode == 0 and "deny" not in ran.stdout, ran.stdout


@pytest.mark.slow  # the hook waits out the store's busy timeout (5 s)
def test_a_store_held_locked_past_the_hooks_wait_still_refuses_and_records_later(
    world: GateWorld,
) -> None:
    world.start("plan")
    holder = sqlite3.connect(world.database, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock past the busy timeout
        ran = world.gate("pre-tool-use", edit(world))
        assert "src/cart.py" in denied(ran)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert not any(e["decision"] == "deny" for e in world.gate_events())  # it could not be written
    world.gate("pre-tool-use", read(world))  # the next hook writes what the last one could not
    assert any(e["decision"] == "deny" for e in world.gate_events())
