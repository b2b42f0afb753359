"""The SQLite store when its file fails: a full disk, a damaged file, a write lock another
process keeps. Each is a -32006 naming the database and what to do, over MCP and in
`handrail runs`; reads go on while a writer waits; nothing is written to a damaged file."""

from __future__ import annotations

import hashlib
import resource
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.damage import damage_table
from tests.helpers.http import HttpServer
from tests.helpers.locks import write_lock_held
from tests.helpers.server import Server, clean_env
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

pytestmark = pytest.mark.slow

# Another process holding the database's write lock until its stdin closes.


def _flows(tmp_path: Path) -> tuple[str, ...]:
    write(tmp_path / "flows", build_feature())
    return ("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", _url(tmp_path))


def _url(tmp_path: Path) -> str:
    return f"sqlite://{tmp_path / 'runs.db'}"  # sqlite:/// and the path without its first /


def _error(reply: dict[str, Any]) -> dict[str, Any]:
    assert reply["isError"] is True, reply
    error: dict[str, Any] = reply["structuredContent"]
    return error


def _runs_cli(*argv: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handrail", "runs", *argv],
        capture_output=True,
        text=True,
        env=clean_env(home),
        timeout=60,
        check=False,
    )


def _limit_file_size(size: int) -> Any:
    def limit() -> None:  # in the server's process only: its files cannot grow past `size`
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails (EFBIG), as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


def test_a_full_disk_fails_the_write_with_a_storage_error_and_keeps_serving(tmp_path: Path) -> None:
    database = tmp_path / "runs.db"
    with Server(*_flows(tmp_path), preexec_fn=_limit_file_size(256 * 1024)) as server:
        server.initialize()
        run = server.result("workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Fill the disk"})["runId"]
        accepted = 0
        failed: dict[str, Any] | None = None
        for i in range(40):
            reply = server.call(
                "workflow_continue", {"runId": run, "context": {f"note{i}": "x" * 40_000}}
            )  # context only: each call one write of a run-sized row
            if reply.get("isError"):
                failed = _error(reply)
                break
            accepted += 1
        assert failed is not None, "the file never reached its size limit"
        assert failed["code"] == -32006, failed
        assert str(database) in failed["message"] and "could not be written" in failed["message"]
        assert "disk full" in failed["message"]
        assert failed["data"] == {"database": str(database), "problem": "unwritable"}
        resumed = server.result("workflow_resume", {"runId": run})  # reads still answer
        assert sorted(resumed["context"]) == [f"note{i}" for i in range(accepted)]
    with sqlite3.connect(database) as db:  # nothing of the failed call was kept
        (events,) = db.execute("SELECT COUNT(*) FROM run_events WHERE run_id = ?", (run,)).fetchone()
    assert events == 1 + accepted


def _damaged(tmp_path: Path, table: str | None = None) -> tuple[str, Path]:
    """A database whose runs were written by a server, then one page in its middle (or
    the root page of `table`) overwritten while no server had it open."""
    database = tmp_path / "runs.db"
    with Server(*_flows(tmp_path)) as server:
        server.initialize()
        run = ""
        for i in range(20):
            run = server.result(
                "workflow_start",
                {"workflowId": WORKFLOW_ID, "goal": f"Run {i}", "context": {"notes": "n" * 3000}},
            )["runId"]
    if table is not None:
        damage_table(database, table)
        return run, database
    db = sqlite3.connect(database)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the file itself
    (page_size,) = db.execute("PRAGMA page_size").fetchone()
    db.close()
    pages = database.stat().st_size // page_size
    assert pages > 10
    with database.open("r+b") as file:
        file.seek(page_size * (pages // 2))
        file.write(b"\xa5" * page_size)
    return run, database


def test_a_damaged_database_is_named_by_runs_commands_in_one_line(tmp_path: Path) -> None:
    run, database = _damaged(tmp_path, "runs")  # they only read: the pages they read
    for argv in (("list",), ("show", run)):
        done = _runs_cli(*argv, "--database", _url(tmp_path), home=tmp_path)
        assert done.returncode == 1, done
        assert done.stdout == ""
        lines = done.stderr.splitlines()
        assert len(lines) == 1, done.stderr
        assert str(database) in lines[0] and "is damaged" in lines[0] and ".recover" in lines[0]


def test_a_damaged_database_is_refused_over_mcp_and_never_written(tmp_path: Path) -> None:
    run, database = _damaged(tmp_path)
    before = hashlib.sha256(database.read_bytes()).hexdigest()
    with Server(*_flows(tmp_path)) as server:
        server.initialize()
        for name, arguments in (
            ("workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Into the damage"}),
            ("workflow_resume", {"runId": run}),
            ("workflow_continue", {"runId": run, "stepId": "plan", "output": "Plan: go."}),
        ):
            error = _error(server.call(name, arguments))
            assert error["code"] == -32006, error
            assert str(database) in error["message"] and "restore it from a backup" in error["message"]
            assert error["data"]["problem"] == "damaged"
        assert server.result("workflow_list", {})  # the tools that need no database carry on
    assert hashlib.sha256(database.read_bytes()).hexdigest() == before


def test_reads_answer_while_writes_wait_on_another_process_lock_and_the_writes_fail_naming_it(
    tmp_path: Path,
) -> None:
    database = tmp_path / "runs.db"
    with HttpServer(*_flows(tmp_path), "--workers", "8") as http:
        started = http.rpc("workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Locked out"})
        run = started["result"]["runId"]
        with write_lock_held(database, timeout=30) as holder:
            answers: dict[str, Any] = {}
            done = {name: threading.Event() for name in ("w1", "w2", "w3")}

            def submit(name: str) -> None:
                answers[name] = http.rpc(
                    "workflow_continue", {"runId": run, "stepId": "plan", "output": "Plan: go."}
                )
                done[name].set()

            writers = [threading.Thread(target=submit, args=(name,)) for name in done]
            for writer in writers:
                writer.start()
            threading.Event().wait(0.5)  # let the writers reach the lock: not a measure
            read = http.rpc("workflow_resume", {"runId": run})
            pending = [name for name, event in done.items() if not event.is_set()]
            assert holder.poll() is None  # the lock is still held
            assert read["result"]["step"]["id"] == "plan"
            assert pending == ["w1", "w2", "w3"], f"the read waited for the writers: {answers}"
            for writer in writers:
                writer.join(timeout=60)
            assert holder.poll() is None  # the writes gave up while the lock was still held
        for name in done:
            error = answers[name]["error"]
            assert error["code"] == -32006, error
            assert str(database) in error["message"] and "write lock" in error["message"]
            assert error["data"] == {"database": str(database), "problem": "locked", "lock": "write"}
        after = http.rpc("workflow_continue", {"runId": run, "stepId": "plan", "output": "Plan: go."})
        assert after["result"]["accepted"] is True, after  # the lock released, writes go through again
