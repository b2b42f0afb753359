"""Many workflow files: a server lists them at once and compiles each on first use,
keeps only a bounded number compiled, and still reports every broken file."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from handrail.catalog import Catalog, Source
from handrail.model.errors import WorkflowNotFound
from handrail.service.core import Service
from tests.helpers.server import Server

pytestmark = pytest.mark.slow

BROKEN = "zz-broken.json"


def workflow(wid: str, first: str = "first") -> dict[str, Any]:
    return {
        "id": wid,
        "name": f"Workflow {wid}",
        "description": f"The {wid} workflow.",
        "version": "1.0.0",
        "steps": [
            {"id": first, "title": "First", "prompt": f"Start {wid}."},
            {"id": "second", "title": "Second", "prompt": "Then this."},
        ],
    }


def listable_but_broken() -> dict[str, Any]:
    """Reads like a workflow (id, name, ...), but its step does not compile."""
    document = workflow("broken-one")
    document["steps"] = [{"id": "a", "title": "A", "prompt": "p", "runCondition": {"var": "x", "and": []}}]
    return document


def folder_of(tmp_path: Path, count: int) -> Path:
    folder = tmp_path / "flows"
    folder.mkdir()
    for index in range(count):
        (folder / f"wf-{index:04d}.json").write_text(json.dumps(workflow(f"wf-{index:04d}", f"step-{index}")))
    (folder / BROKEN).write_text(json.dumps(listable_but_broken()))
    return folder


def until(check: Any, seconds: float = 60.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"not within {seconds}s")


def first_step(server: Server, wid: str) -> str:
    result = server.result("workflow_next", {"workflowId": wid, "completedSteps": []})
    step: str = result["step"]["id"]
    return step


def test_a_server_over_many_files_answers_at_once_and_reports_the_broken_one_once_checked(
    tmp_path: Path,
) -> None:
    folder = folder_of(tmp_path, 600)
    with Server("--no-bundled", "--workflows", str(folder)) as server:
        server.initialize()
        assert first_step(server, "wf-0300") == "step-300"  # the second request answers
        listing = until(lambda: (found := server.result("workflow_list"))["diagnostics"] and found)
        assert len(listing["workflows"]) == 600
        assert "broken-one" not in {w["id"] for w in listing["workflows"]}
        assert {Path(d["file"]).name for d in listing["diagnostics"]} == {BROKEN}
        assert {d["code"] for d in listing["diagnostics"]} >= {"H305"}
        # the clients heard that the list changed, as on any reload
        until(
            lambda: (
                server.result("ping") is not None  # reads what came before its answer
                and any(n["method"].endswith("list_changed") for n in server.notifications)
            ),
            10,
        )
        error = server.error("workflow_next", {"workflowId": "broken-one", "completedSteps": []})
        assert error["code"] == -32001


def test_a_small_cache_evicts_and_compiles_again_and_an_evicted_file_keeps_its_last_good_version(
    tmp_path: Path,
) -> None:
    folder = folder_of(tmp_path, 5)
    with Server("--no-bundled", "--workflows", str(folder), "--max-compiled-workflows", "1") as server:
        server.initialize()
        for _ in range(2):  # each compiled, evicted by the next, and compiled again
            assert [first_step(server, f"wf-{i:04d}") for i in range(5)] == [f"step-{i}" for i in range(5)]
        document = server.result("workflow_get", {"id": "wf-0001"})
        assert document["id"] == "wf-0001"
        until(lambda: server.result("workflow_list")["diagnostics"])  # every file checked
        # wf-0001 is not the one compiled now; a broken edit keeps its last good version
        (folder / "wf-0001.json").write_text('{"id": "wf-0001", "steps": [oops]}')
        until(
            lambda: any(
                Path(d["file"]).name == "wf-0001.json" for d in server.result("workflow_list")["diagnostics"]
            ),
            10,
        )
        assert "wf-0001" in {w["id"] for w in server.result("workflow_list")["workflows"]}
        assert first_step(server, "wf-0001") == "step-1"


def test_handrail_list_still_names_every_broken_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from handrail.cli import main

    folder = folder_of(tmp_path, 20)
    monkeypatch.chdir(folder)  # no ./workflows, no ~/.handrail: only the folder named
    monkeypatch.setenv("HOME", str(folder))
    for variable in ("HANDRAIL_WORKFLOWS", "WORKFLOW_STORAGE_PATH", "WORKFLOW_GIT_REPOS"):
        monkeypatch.delenv(variable, raising=False)
    code = main(["list", "--no-bundled", "--workflows", str(folder), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code != 0
    assert len(out["workflows"]) == 20
    assert {Path(d["file"]).name for d in out["diagnostics"]} == {BROKEN}


def test_a_listed_file_found_broken_on_first_use_is_not_found_and_then_reported(tmp_path: Path) -> None:
    folder = folder_of(tmp_path, 3)
    catalog = Catalog([Source("cli", folder)], interval=0, lazy=True)  # listed, nothing checked
    assert "broken-one" in catalog.snapshot().entries
    service = Service(catalog)
    with pytest.raises(WorkflowNotFound):
        service.call("workflow_next", {"workflowId": "broken-one", "completedSteps": []})
    snapshot = catalog.snapshot()
    assert "broken-one" not in snapshot.entries
    assert {Path(d.file).name for d in snapshot.problems} == {BROKEN}
    assert (
        service.call("workflow_next", {"workflowId": "wf-0002", "completedSteps": []})["step"]["id"]
        == "step-2"
    )
