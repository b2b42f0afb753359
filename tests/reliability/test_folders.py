"""Hostile workflow folders, as `handrail list`, `handrail start` and `handrail serve` meet
them: symbolic link loops, names that are not UTF-8, FIFOs, deep nesting. Each is
reported as a problem of its own path and every good workflow beside it is served."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.http import HttpServer
from tests.helpers.server import Server, clean_env

pytestmark = pytest.mark.slow

GOOD = {
    "id": "good",
    "name": "Good",
    "description": "A workflow that loads.",
    "version": "1.0.0",
    "steps": [{"id": "one", "title": "One", "prompt": "Do it."}],
}


def good(folder: Path, wid: str = "good", name: str = "good.json") -> None:
    (folder / name).write_text(json.dumps({**GOOD, "id": wid}), encoding="utf-8")


def hostile(folder: Path) -> Path:
    """A folder holding one good workflow beside a link loop of each kind."""
    folder.mkdir()
    good(folder)
    os.symlink("loop-b.json", folder / "loop-a.json")  # a -> b -> a
    os.symlink("loop-a.json", folder / "loop-b.json")
    os.symlink("self", folder / "self")  # not *.json, still a loop
    (folder / "sub").mkdir()
    os.symlink("..", folder / "sub" / "up")  # a folder link back up: never walked into
    return folder


def run_list(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handrail", "list", "--no-bundled", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=clean_env(cwd),
        timeout=60,
    )


def problems(diagnostics: list[dict[str, Any]]) -> dict[str, str]:
    return {Path(d["file"]).name: d["message"] for d in diagnostics}


def test_handrail_list_reports_each_link_loop_and_lists_the_good_workflow(tmp_path: Path) -> None:
    folder = hostile(tmp_path / "wf")
    done = run_list("--workflows", str(folder), "--format", "json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # list exits 1 when a file is broken (README)
    report = json.loads(done.stdout)
    assert [w["id"] for w in report["workflows"]] == ["good"]
    found = problems(report["diagnostics"])
    for name in ("loop-a.json", "loop-b.json", "self"):
        assert found[name] == "refused: a symbolic link loop"
    assert "up" not in found


def test_handrail_start_answers_initialize_and_lists_beside_a_link_loop(tmp_path: Path) -> None:
    folder = hostile(tmp_path / "wf")
    with Server("--no-bundled", "--workflows", str(folder)) as server:
        server.initialize()
        listing = server.result("workflow_list")
        assert [w["id"] for w in listing["workflows"]] == ["good"]
        assert problems(listing["diagnostics"])["loop-a.json"] == "refused: a symbolic link loop"


def test_handrail_serve_comes_up_and_answers_beside_a_link_loop(tmp_path: Path) -> None:
    folder = hostile(tmp_path / "wf")
    with HttpServer("--no-bundled", "--workflows", str(folder)) as http:
        assert http.client.get(f"{http.base}/healthz").json()["workflows"] == 1
        listing = http.rpc("workflow_list")["result"]
        assert [w["id"] for w in listing["workflows"]] == ["good"]
        assert problems(listing["diagnostics"])["self"] == "refused: a symbolic link loop"


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS file systems refuse names that are not UTF-8")
def test_a_file_name_that_is_not_utf8_is_served_and_shown_escaped(tmp_path: Path) -> None:
    folder = tmp_path / "wf"
    folder.mkdir()
    good(folder, "odd", os.fsdecode(b"odd-\xff.json"))
    (folder / os.fsdecode(b"broken-\xfe.json")).write_text("{", encoding="utf-8")
    with Server("--no-bundled", "--workflows", str(folder)) as server:
        server.initialize()
        listing = server.result("workflow_list")
        assert [w["id"] for w in listing["workflows"]] == ["odd"]
        assert [d["file"] for d in listing["diagnostics"]] == [str(folder / "broken-\\xfe.json")]
        assert server.result("workflow_get", {"id": "odd"})["id"] == "odd"
    done = run_list("--workflows", str(folder), cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # a broken file: listed, and exit 1 (README)
    assert "broken-\\xfe.json:1:2: error H001" in done.stderr  # problems on stderr


def test_fifos_and_folders_nested_too_deep_are_refused_without_hanging(tmp_path: Path) -> None:
    folder = tmp_path / "wf"
    folder.mkdir()
    good(folder)
    os.mkfifo(folder / "pipe.json")  # opening it for reading would wait for a writer forever
    deep = folder
    for _ in range(40):
        deep = deep / "d"
    deep.mkdir(parents=True)
    good(deep, "too-deep")
    started = time.monotonic()
    done = run_list("--workflows", str(folder), "--format", "json", cwd=tmp_path)
    assert time.monotonic() - started < 30
    report = json.loads(done.stdout)
    assert [w["id"] for w in report["workflows"]] == ["good"]
    found = problems(report["diagnostics"])
    assert found["pipe.json"] == "refused: not a regular file"
    assert found["d"] == "refused: nested deeper than 32 folders"


def test_a_link_loop_appearing_while_serving_does_not_stop_reloads(tmp_path: Path) -> None:
    folder = tmp_path / "wf"
    folder.mkdir()
    good(folder)
    with Server("--no-bundled", "--workflows", str(folder), "--reload-interval", "0.1") as server:
        server.initialize()
        assert [w["id"] for w in server.result("workflow_list")["workflows"]] == ["good"]
        (folder / "sub").mkdir()
        os.symlink("..", folder / "sub" / "up")
        os.symlink("loop-b.json", folder / "loop-a.json")
        os.symlink("loop-a.json", folder / "loop-b.json")
        time.sleep(0.5)
        good(folder / "sub", "later", "later.json")  # a change after the loops appeared
        deadline = time.monotonic() + 10
        while True:
            listing = server.result("workflow_list")
            if [w["id"] for w in listing["workflows"]] == ["good", "later"]:
                break
            assert time.monotonic() < deadline, f"the new workflow was never served: {listing}"
            time.sleep(0.1)
        assert problems(listing["diagnostics"])["loop-b.json"] == "refused: a symbolic link loop"


def test_a_file_swapped_for_a_fifo_after_it_was_found_is_refused_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from handrail.catalog import Catalog, Source
    from handrail.catalog import sources as catalog_module

    folder = tmp_path / "wf"
    folder.mkdir()
    good(folder)
    os.mkfifo(folder / "swapped.json")
    found = [folder / "good.json", folder / "swapped.json"]  # as the walk saw them, a moment before
    monkeypatch.setattr(catalog_module.folders, "discover", lambda root: (list(found), []))
    outcome: dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: outcome.update(snapshot=Catalog([Source("cli", folder)]).reload())
    )
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "the catalog waited for a writer on the FIFO"
    snapshot = outcome["snapshot"]
    assert list(snapshot.entries) == ["good"]
    assert problems([d.as_dict() for d in snapshot.problems]) == {
        "swapped.json": "refused: not a regular file"
    }


def test_reloads_go_on_by_polling_when_the_folders_cannot_be_watched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from handrail.catalog import Catalog, Source, watch

    def cannot_watch(*args: Any, **kwargs: Any) -> Any:
        raise OSError("OS file watch limit reached")

    monkeypatch.setattr(watch, "changes", cannot_watch)
    folder = tmp_path / "wf"
    folder.mkdir()
    good(folder)
    catalog = Catalog([Source("cli", folder)])
    catalog.watch(interval=0.05)
    try:
        assert list(catalog.snapshot().entries) == ["good"]
        good(folder, "later", "later.json")
        deadline = time.monotonic() + 15
        while list(catalog.snapshot().entries) != ["good", "later"]:
            assert time.monotonic() < deadline, "the new file was never loaded"
            time.sleep(0.05)
    finally:
        catalog.close()
