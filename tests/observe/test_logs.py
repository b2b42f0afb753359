"""observe/logs.py: a logger that loads `logging` with its first record, and the server's
log configuration applied then, or right after `handrail start` has answered first."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from handrail.observe import logs
from tests.helpers.environment import child_env
from tests.helpers.server import INITIALIZE

ROOT = Path(__file__).resolve().parents[2]


def test_a_record_goes_to_the_logger_of_the_same_name_and_names_its_caller(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = logs.Log("handrail.tests.logs")
    with caplog.at_level("INFO", logger="handrail.tests.logs"):
        log.info("one %s", "record")
        log.warning("two")
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("handrail.tests.logs", "INFO", "one record"),
        ("handrail.tests.logs", "WARNING", "two"),
    ]
    assert {r.funcName for r in caplog.records} == {
        "test_a_record_goes_to_the_logger_of_the_same_name_and_names_its_caller"
    }


def test_the_configuration_waits_for_the_first_record_while_logging_is_not_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    applied: list[str] = []
    monkeypatch.delitem(sys.modules, "logging")  # as in `handrail start` before its first answer
    logs.configure(lambda: applied.append("configured"))
    assert applied == []
    monkeypatch.setitem(sys.modules, "logging", logging)
    logs.Log("handrail.tests.logs.first").logger()
    logs.settle()
    assert applied == ["configured"]


def test_the_configuration_applies_at_once_where_logging_is_loaded_already() -> None:
    applied: list[str] = []
    logs.configure(lambda: applied.append("configured"))
    assert applied == ["configured"]
    logs.settle()
    assert applied == ["configured"]


def test_an_exception_is_logged_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    try:
        raise ValueError("the cause")
    except ValueError:
        logs.Log("handrail.tests.logs").exception("failed")
    assert caplog.records[-1].exc_info is not None and "the cause" in caplog.text


def test_a_warning_of_the_first_listing_reaches_stderr_in_the_servers_format_after_the_first_answer(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "flows"
    folder.mkdir()
    for name in ("a.json", "b.json"):  # the same id twice: warned of once the first answer is out
        shutil.copy(ROOT / "workflows" / "code-review.json", folder / name)
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "start", "--workflows", str(folder)],
        input=json.dumps(INITIALIZE) + "\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=child_env(tmp_path),
        timeout=60,
    )
    assert json.loads(done.stdout.splitlines()[0])["id"] == 0
    warning = next(line for line in done.stderr.splitlines() if "H210" in line)
    assert warning.startswith("handrail WARNING handrail.catalog: ") and "this file wins" in warning
