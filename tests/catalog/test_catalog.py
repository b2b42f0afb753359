"""The catalog: where workflows come from, in what precedence, what is refused, and
how it stays current (last good versions, immutable snapshots, the watcher)."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from handrail import compiler as compiler_module
from handrail._resources import resource
from handrail.catalog import Catalog, Snapshot, Source, default_sources, discover, load_catalog
from handrail.catalog import live as catalog_module


def workflow(
    wid: str, *, version: str = "1.0.0", title: str = "First step", steps: int = 1
) -> dict[str, Any]:
    return {
        "id": wid,
        "name": f"Workflow {wid}",
        "description": f"The {wid} workflow.",
        "version": version,
        "steps": [
            {"id": f"step-{i}", "title": title if i == 0 else f"Step {i}", "prompt": "Do it."}
            for i in range(steps)
        ],
    }


def write(path: Path, wid: str, **kwargs: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(workflow(wid, **kwargs), indent=2), encoding="utf-8")
    return path


BROKEN = '{\n  "id": "broken",\n  "name": "Broken",\n  "steps": [\n    {"id": oops}\n  ]\n}\n'


def catalog_of(*folders: Path, **kwargs: Any) -> Catalog:
    return Catalog([Source("cli", f) for f in folders], **kwargs)


def problem_files(snapshot: Snapshot) -> set[str]:
    return {d.file for d in snapshot.problems}


def eventually(check: Callable[[], bool], within: float = 1.0) -> float:
    """Seconds until `check()` held; fails if it does not hold within `within` seconds."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > within:
            raise AssertionError(f"not seen within {within}s")
        time.sleep(0.01)
    return time.monotonic() - start


# -- sources and precedence -------------------------------------------------------------


def test_default_sources_in_precedence_order(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    a, b, c, d, e, f = (tmp_path / name for name in "abcdef")
    environ = {
        "WORKFLOW_STORAGE_PATH": f"{a}{os.pathsep}{b}",
        "HANDRAIL_WORKFLOWS": f"{c}{os.pathsep}{os.pathsep} {d} ",  # empty parts and blanks are ignored
    }
    sources = default_sources([e, str(f)], environ=environ, cwd=cwd, home=home)
    assert [(s.name, s.path) for s in sources] == [
        ("bundled", resource("workflows")),
        ("user", home / ".workrail" / "workflows"),
        ("user", home / ".handrail" / "workflows"),
        ("project", cwd / "workflows"),
        ("env:WORKFLOW_STORAGE_PATH", a),
        ("env:WORKFLOW_STORAGE_PATH", b),
        ("env:HANDRAIL_WORKFLOWS", c),
        ("env:HANDRAIL_WORKFLOWS", d),
        ("cli", e),
        ("cli", f),
    ]


@pytest.mark.parametrize("value", ["false", "FALSE", " False ", "0", "no", "off"])
def test_include_bundled_false_leaves_the_bundled_set_out(tmp_path: Path, value: str) -> None:
    sources = default_sources(environ={"WORKFLOW_INCLUDE_BUNDLED": value}, cwd=tmp_path, home=tmp_path)
    assert "bundled" not in [s.name for s in sources]


@pytest.mark.parametrize(
    "environ", [{}, {"WORKFLOW_INCLUDE_BUNDLED": "true"}, {"WORKFLOW_INCLUDE_BUNDLED": "1"}]
)
def test_bundled_is_included_by_default(tmp_path: Path, environ: dict[str, str]) -> None:
    sources = default_sources(environ=environ, cwd=tmp_path, home=tmp_path)
    assert sources[0] == Source("bundled", resource("workflows"))


def test_explicit_bundled_flag_wins_over_the_environment(tmp_path: Path) -> None:
    off = default_sources(
        bundled=False, environ={"WORKFLOW_INCLUDE_BUNDLED": "true"}, cwd=tmp_path, home=tmp_path
    )
    on = default_sources(
        bundled=True, environ={"WORKFLOW_INCLUDE_BUNDLED": "false"}, cwd=tmp_path, home=tmp_path
    )
    assert "bundled" not in [s.name for s in off]
    assert on[0].name == "bundled"


def test_the_same_folder_twice_counts_once_at_its_highest_place(tmp_path: Path) -> None:
    project = tmp_path / "workflows"
    project.mkdir()
    sources = default_sources(
        [project], bundled=False, environ={"HANDRAIL_WORKFLOWS": str(project)}, cwd=tmp_path, home=tmp_path
    )
    assert [s for s in sources if s.path.resolve() == project.resolve()] == [Source("cli", project)]
    assert sources[-1] == Source("cli", project)


def test_precedence_later_source_wins_and_overrides_are_recorded(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    storage, extra, cli_file = tmp_path / "storage", tmp_path / "extra", tmp_path / "cli" / "one.json"
    write(home / ".workrail" / "workflows" / "s.json", "shared", version="0.0.1")
    write(home / ".handrail" / "workflows" / "s.json", "shared", version="0.0.2")
    write(home / ".handrail" / "workflows" / "u.json", "user-only")
    write(cwd / "workflows" / "s.json", "shared", version="0.0.3")
    write(storage / "s.json", "shared", version="0.0.4")
    write(extra / "s.json", "shared", version="0.0.5")
    write(extra / "e.json", "env-only")
    write(cli_file, "shared", version="0.0.6")  # a single file as a source
    environ = {"WORKFLOW_STORAGE_PATH": str(storage), "HANDRAIL_WORKFLOWS": str(extra)}
    sources = default_sources([cli_file], bundled=False, environ=environ, cwd=cwd, home=home)
    snapshot = Catalog(sources).reload()

    assert sorted(snapshot.entries) == ["env-only", "shared", "user-only"]
    shared = snapshot.entries["shared"]
    assert (shared.workflow.version, shared.source) == ("0.0.6", Source("cli", cli_file))
    assert snapshot.entries["user-only"].source == Source("user", home / ".handrail" / "workflows")
    assert snapshot.entries["env-only"].source.name == "env:HANDRAIL_WORKFLOWS"
    # each later definition of `shared` overrides the one before it, in order
    chain = [(winner.name, loser.name) for wid, winner, loser in snapshot.overrides if wid == "shared"]
    assert chain == [
        ("user", "user"),
        ("project", "user"),
        ("env:WORKFLOW_STORAGE_PATH", "project"),
        ("env:HANDRAIL_WORKFLOWS", "env:WORKFLOW_STORAGE_PATH"),
        ("cli", "env:HANDRAIL_WORKFLOWS"),
    ]
    assert [snapshot.per_source[s] for s in sources] == [1, 2, 1, 1, 2, 1]
    assert not snapshot.problems


def test_missing_sources_are_a_warning_not_an_error(tmp_path: Path) -> None:
    write(tmp_path / "here" / "a.json", "alpha")
    snapshot = catalog_of(tmp_path / "nowhere", tmp_path / "here", tmp_path / "none.json").reload()
    assert list(snapshot.entries) == ["alpha"]
    assert [(d.code, d.severity, d.file) for d in snapshot.problems] == [
        ("H002", "warning", str(tmp_path / "nowhere")),
        ("H002", "warning", str(tmp_path / "none.json")),
    ]
    assert snapshot.per_source[Source("cli", tmp_path / "nowhere")] == 0


def test_load_catalog_is_free_of_user_and_environment_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HANDRAIL_WORKFLOWS", str(tmp_path / "env"))
    monkeypatch.setenv("HOME", str(tmp_path))
    write(tmp_path / "env" / "e.json", "from-env")
    write(tmp_path / ".handrail" / "workflows" / "u.json", "from-user")
    write(tmp_path / "given" / "g.json", "given")
    catalog = load_catalog(tmp_path / "given", bundled=False)
    assert list(catalog.snapshot().entries) == ["given"]


# -- discovery ------------------------------------------------------------------------------


def test_folders_are_read_recursively_for_json_only(tmp_path: Path) -> None:
    write(tmp_path / "top.json", "top")
    write(tmp_path / "a" / "b" / "c" / "deep.json", "deep")
    write(tmp_path / "a" / "mid.json", "mid")
    (tmp_path / "a" / "notes.txt").write_text("not a workflow")
    (tmp_path / "a" / "b" / "workflow.json.bak").write_text("{")
    snapshot = catalog_of(tmp_path).reload()
    assert sorted(snapshot.entries) == ["deep", "mid", "top"]
    assert snapshot.problems == ()


def test_a_link_leaving_the_folder_is_refused_and_one_inside_is_allowed(tmp_path: Path) -> None:
    folder, outside = tmp_path / "folder", tmp_path / "outside"
    write(outside / "secret.json", "secret")
    write(folder / "real" / "target.txt", "linked")  # not *.json: reached only through the link
    write(folder / "plain.json", "plain")
    (folder / "escape.json").symlink_to(outside / "secret.json")
    (folder / "relative-escape.json").symlink_to(Path("..") / "outside" / "secret.json")
    (folder / "alias.json").symlink_to(Path("real") / "target.txt")
    snapshot = catalog_of(folder).reload()
    assert sorted(snapshot.entries) == ["linked", "plain"]
    refused = {Path(d.file).name: d for d in snapshot.problems}
    assert set(refused) == {"escape.json", "relative-escape.json"}
    for d in refused.values():
        assert d.severity == "error"
        assert "outside" in d.message


def test_a_folder_link_leaving_the_source_is_refused(tmp_path: Path) -> None:
    folder, outside = tmp_path / "folder", tmp_path / "outside"
    write(outside / "secret.json", "secret")
    write(folder / "plain.json", "plain")
    (folder / "elsewhere").symlink_to(outside, target_is_directory=True)
    snapshot = catalog_of(folder).reload()
    assert list(snapshot.entries) == ["plain"]
    assert [Path(d.file).name for d in snapshot.problems] == ["elsewhere"]
    assert "outside" in snapshot.problems[0].message


def test_a_dangling_link_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "ok.json", "okay")
    (tmp_path / "dangling.json").symlink_to(tmp_path / "gone.json")
    snapshot = catalog_of(tmp_path).reload()
    assert list(snapshot.entries) == ["okay"]
    assert problem_files(snapshot) == {str(tmp_path / "dangling.json")}


def test_an_oversized_file_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "small.json", "small")
    (tmp_path / "big.json").write_text(json.dumps(workflow("big")) + " " * 3000, encoding="utf-8")
    snapshot = catalog_of(tmp_path, max_bytes=2000).reload()
    assert list(snapshot.entries) == ["small"]
    (problem,) = snapshot.problems
    assert problem.file == str(tmp_path / "big.json")
    assert "larger than 2000 bytes" in problem.message
    # the default limit (1 MB) accepts it
    assert sorted(catalog_of(tmp_path).reload().entries) == ["big", "small"]


def test_the_default_limit_refuses_a_file_over_one_megabyte(tmp_path: Path) -> None:
    (tmp_path / "huge.json").write_text(json.dumps(workflow("huge")) + " " * 1_000_000, encoding="utf-8")
    snapshot = catalog_of(tmp_path).reload()
    assert not snapshot.entries
    assert "larger than 1000000 bytes" in snapshot.problems[0].message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_fifo_is_refused_as_not_a_regular_file(tmp_path: Path) -> None:
    write(tmp_path / "ok.json", "okay")
    os.mkfifo(tmp_path / "pipe.json")  # opening it would block: discovery must not
    snapshot = catalog_of(tmp_path).reload()
    assert list(snapshot.entries) == ["okay"]
    (problem,) = snapshot.problems
    assert problem.file == str(tmp_path / "pipe.json")
    assert "not a regular file" in problem.message
    files, refused = discover(Source("cli", tmp_path))
    assert files == [tmp_path / "ok.json"] and len(refused) == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_fifo_given_as_the_source_itself_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.json")
    files, refused = discover(Source("cli", tmp_path / "pipe.json"))
    assert files == []
    assert [d.message for d in refused] == ["refused: not a regular file"]


# -- broken files ---------------------------------------------------------------------------


def test_a_break_keeps_the_last_good_version_in_service(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path / "a.json", "alpha", version="1.0.0", title="Old title")
    catalog = catalog_of(tmp_path)
    first = catalog.reload()
    assert not first.entries["alpha"].stale

    path.write_text(BROKEN.replace('"broken"', '"alpha"'), encoding="utf-8")
    with caplog.at_level("WARNING", logger="handrail.catalog"):
        broken = catalog.reload()
    entry = broken.entries["alpha"]
    assert entry.stale
    assert entry.workflow.version == "1.0.0"
    assert entry.workflow.nodes["step-0"].title == "Old title"
    (problem,) = broken.problems
    assert (problem.file, problem.line, problem.severity) == (str(path), 5, "error")
    assert str(path) in caplog.text  # the break is logged

    write(path, "alpha", version="2.0.0", title="New title")
    fixed = catalog.reload()
    assert not fixed.entries["alpha"].stale
    assert fixed.entries["alpha"].workflow.version == "2.0.0"
    assert fixed.problems == ()


def test_a_request_while_the_first_change_is_listed_still_gets_the_version_it_was_listed_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server lists its first files without compiling them. When one changes, the lister
    first compiles the version it had listed (it may be the last good one); a request for
    that version in the meantime still gets it, never "not found" (a CI run once saw that)."""
    path = write(tmp_path / "a.json", "alpha", version="1.0.0")
    catalog = Catalog([Source("cli", tmp_path)], interval=0.01, lazy=True)
    listed = catalog.snapshot()  # listed only: nothing compiled yet
    write(path, "alpha", version="2.0.0", title="A longer title than before")

    compiling, release = threading.Event(), threading.Event()
    real = catalog_module.compile_file

    def held(file: Path, data: Any) -> Any:
        if threading.current_thread().name == "lister":  # hold the lister mid-compile
            compiling.set()
            release.wait(10)
        return real(file, data)

    monkeypatch.setattr(catalog_module, "compile_file", held)
    lister = threading.Thread(target=catalog.reload, name="lister", daemon=True)
    lister.start()
    try:
        assert compiling.wait(10), "the lister compiled nothing"
        got = listed.get("alpha")
    finally:
        release.set()
        lister.join(10)
    assert got is not None and got.version == "1.0.0"
    assert catalog.snapshot().get("alpha").version == "2.0.0"  # type: ignore[union-attr]


def test_a_request_while_a_pending_file_is_compiled_waits_for_its_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server answers `initialize` without compiling a file its quick listing cannot
    read (it is pending); its threads compile it right after. A request meanwhile waits
    for that verdict: it never gets a listing that leaves the file out unreported."""
    write(tmp_path / "a.json", "alpha")
    broken = tmp_path / "broken.json"
    broken.write_text('{"id": "broken", "steps": [', encoding="utf-8")
    compiling, release = threading.Event(), threading.Event()
    real = catalog_module.compile_file

    def held(file: Path, data: Any) -> Any:
        if threading.current_thread().name.startswith("handrail-") and file == broken:
            compiling.set()  # the watcher or the checker, mid-compile, holding the catalog's lock
            release.wait(10)
        return real(file, data)

    monkeypatch.setattr(catalog_module, "compile_file", held)
    catalog = Catalog([Source("cli", tmp_path)], interval=0.01)
    assert [w.id for w in catalog.summaries()] == ["alpha"]  # what `initialize` is told: no compile
    catalog.watch()
    asked: list[Snapshot] = []
    try:
        assert compiling.wait(10), "nothing compiled the pending file"
        asker = threading.Thread(target=lambda: asked.append(catalog.snapshot()), daemon=True)
        asker.start()
        asker.join(0.2)
        release.set()
        asker.join(10)
    finally:
        release.set()
        catalog.close()
    assert [problem.file for problem in asked[0].problems] == [str(broken)]
    assert sorted(asked[0].entries) == ["alpha"]


def test_a_schema_break_also_keeps_the_last_good_version(tmp_path: Path) -> None:
    path = write(tmp_path / "a.json", "alpha")
    catalog = catalog_of(tmp_path)
    catalog.reload()
    document = workflow("alpha", version="9.9.9")
    document["steps"] = "not a list"
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    snapshot = catalog.reload()
    assert snapshot.entries["alpha"].stale and snapshot.entries["alpha"].workflow.version == "1.0.0"
    assert problem_files(snapshot) == {str(path)}


def test_a_removed_broken_file_leaves_nothing_behind(tmp_path: Path) -> None:
    path = write(tmp_path / "a.json", "alpha")
    catalog = catalog_of(tmp_path)
    catalog.reload()
    path.write_text("{", encoding="utf-8")
    assert catalog.reload().entries["alpha"].stale
    path.unlink()
    snapshot = catalog.reload()
    assert not snapshot.entries and not snapshot.problems
    path.write_text("{", encoding="utf-8")  # back, but broken: the old good version is forgotten
    snapshot = catalog.reload()
    assert not snapshot.entries and problem_files(snapshot) == {str(path)}


def test_a_file_that_never_compiled_is_left_out_and_reported(tmp_path: Path) -> None:
    write(tmp_path / "good.json", "good")
    (tmp_path / "broken.json").write_text(BROKEN, encoding="utf-8")
    snapshot = catalog_of(tmp_path).reload()
    assert list(snapshot.entries) == ["good"]
    (problem,) = snapshot.problems
    assert (problem.file, problem.line, problem.severity) == (str(tmp_path / "broken.json"), 5, "error")


def test_one_bad_file_never_hides_the_others(tmp_path: Path) -> None:
    for i in range(5):
        write(tmp_path / f"good-{i}.json", f"good-{i}")
    (tmp_path / "a-syntax.json").write_text(BROKEN, encoding="utf-8")
    (tmp_path / "b-empty.json").write_text("", encoding="utf-8")
    (tmp_path / "c-latin1.json").write_bytes(b'{"id": "caf\xe9"}')
    (tmp_path / "d-array.json").write_text("[]", encoding="utf-8")
    (tmp_path / "e-schema.json").write_text(json.dumps({"id": "x"}), encoding="utf-8")
    (tmp_path / "f-deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    bad_id = workflow("Not Valid Id!")
    (tmp_path / "g-bad-id.json").write_text(json.dumps(bad_id), encoding="utf-8")
    snapshot = catalog_of(tmp_path).reload()
    assert sorted(snapshot.entries) == [f"good-{i}" for i in range(5)]
    assert {Path(f).name for f in problem_files(snapshot)} == {
        "a-syntax.json",
        "b-empty.json",
        "c-latin1.json",
        "d-array.json",
        "e-schema.json",
        "f-deep.json",
        "g-bad-id.json",
    }


def test_duplicate_ids_in_one_source_warn_and_the_later_file_wins(tmp_path: Path) -> None:
    write(tmp_path / "a.json", "twin", version="1.0.0")
    write(tmp_path / "b.json", "twin", version="2.0.0")
    snapshot = catalog_of(tmp_path).reload()
    assert snapshot.entries["twin"].workflow.version == "2.0.0"
    (warning,) = snapshot.problems
    assert warning.severity == "warning" and warning.code == "H210"
    assert warning.file == str(tmp_path / "b.json")
    assert str(tmp_path / "a.json") in warning.message
    assert snapshot.overrides == ()  # not an override: the same source


def test_the_id_comes_from_the_content_not_the_file_name(tmp_path: Path) -> None:
    write(tmp_path / "some-file-name.json", "the-real-id")
    assert list(catalog_of(tmp_path).reload().entries) == ["the-real-id"]


# -- snapshots ------------------------------------------------------------------------------


def test_snapshots_are_immutable_and_swapped_whole(tmp_path: Path) -> None:
    path = write(tmp_path / "a.json", "alpha", version="1.0.0")
    catalog = catalog_of(tmp_path)
    old = catalog.reload()
    with pytest.raises(TypeError):
        old.entries["beta"] = old.entries["alpha"]  # type: ignore[index]
    with pytest.raises(TypeError):
        old.per_source[Source("cli", tmp_path)] = 9  # type: ignore[index]
    with pytest.raises(AttributeError):  # frozen
        old.generation = 99  # type: ignore[misc]
    with pytest.raises(AttributeError):  # frozen
        old.entries["alpha"].stale = True  # type: ignore[misc]
    assert isinstance(old.problems, tuple) and isinstance(old.overrides, tuple)

    assert catalog.reload() is old  # nothing changed: the same snapshot, no new generation
    write(path, "alpha", version="2.0.0")
    write(tmp_path / "b.json", "beta")
    new = catalog.reload()
    assert new is not old and new.generation > old.generation
    assert list(old.entries) == ["alpha"] and old.entries["alpha"].workflow.version == "1.0.0"
    assert sorted(new.entries) == ["alpha", "beta"] and new.get("alpha").version == "2.0.0"  # type: ignore[union-attr]


def test_snapshot_rechecks_the_files_at_most_every_interval(tmp_path: Path) -> None:
    write(tmp_path / "a.json", "alpha")
    catalog = catalog_of(tmp_path, interval=0.2)
    first = catalog.snapshot()
    write(tmp_path / "b.json", "beta")
    assert catalog.snapshot() is first  # within the interval: no file system work
    eventually(lambda: "beta" in catalog.snapshot().entries)


def test_a_same_size_rewrite_within_the_timestamp_granularity_is_seen(tmp_path: Path) -> None:
    path = write(tmp_path / "a.json", "alpha", version="1.0.1")
    catalog = catalog_of(tmp_path)
    catalog.reload()
    before = path.stat()
    write(path, "alpha", version="1.0.2")  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # and, as it may be, the same mtime
    assert path.stat().st_size == before.st_size
    assert catalog.reload().entries["alpha"].workflow.version == "1.0.2"


# -- watching -------------------------------------------------------------------------------


@pytest.mark.slow
def test_watch_sees_an_add_a_change_and_a_removal_within_a_second(tmp_path: Path) -> None:
    write(tmp_path / "a.json", "alpha", version="1.0.0")
    catalog = catalog_of(tmp_path)
    seen: list[Snapshot] = []
    notified = threading.Event()

    def listener(snapshot: Snapshot) -> None:
        seen.append(snapshot)
        notified.set()

    catalog.on_change(listener)
    catalog.watch(interval=0.05)
    try:
        assert list(catalog.snapshot().entries) == ["alpha"]

        write(tmp_path / "b.json", "beta")
        eventually(lambda: "beta" in catalog.snapshot().entries)
        assert notified.wait(1.0)

        write(tmp_path / "a.json", "alpha", version="2.0.0")
        eventually(lambda: catalog.snapshot().entries["alpha"].workflow.version == "2.0.0")

        (tmp_path / "b.json").unlink()
        eventually(lambda: "beta" not in catalog.snapshot().entries)

        (tmp_path / "a.json").write_text("{ broken", encoding="utf-8")
        eventually(lambda: catalog.snapshot().entries["alpha"].stale)
        assert catalog.snapshot().entries["alpha"].workflow.version == "2.0.0"

        generations = [s.generation for s in seen]
        assert generations == sorted(generations) and len(set(generations)) == len(generations)
        assert seen[-1] is catalog.snapshot()
    finally:
        catalog.close()


def test_watch_keeps_going_after_a_failing_listener(tmp_path: Path) -> None:
    catalog = catalog_of(tmp_path)

    def bad(snapshot: Snapshot) -> None:
        raise RuntimeError("listener failed")

    catalog.on_change(bad)
    catalog.watch(interval=0.05)
    try:
        write(tmp_path / "a.json", "alpha")
        eventually(lambda: "alpha" in catalog.snapshot().entries)
        write(tmp_path / "b.json", "beta")
        eventually(lambda: "beta" in catalog.snapshot().entries)
    finally:
        catalog.close()


def test_close_stops_the_watcher(tmp_path: Path) -> None:
    catalog = catalog_of(tmp_path)
    catalog.watch(interval=0.02)
    watcher = catalog._watcher
    assert watcher is not None and watcher.is_alive()
    catalog.close()
    watcher.join(1.0)
    assert not watcher.is_alive()


def test_an_unsettled_file_is_read_again_even_when_its_stamp_is_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two writes within one tick of a coarse file clock leave the same stamp. A file
    # changed that recently is read again at the next look, until its stamp settles.
    path = write(tmp_path / "a.json", "alpha", version="1.0.1")
    stamp = [(time.time_ns(), 100, 1, time.time_ns())]
    monkeypatch.setattr(catalog_module, "stamp", lambda p: stamp[0])
    catalog = catalog_of(tmp_path)
    first = catalog.reload()
    write(path, "alpha", version="1.0.2")
    second = catalog.reload()
    assert second.entries["alpha"].workflow.version == "1.0.2"
    assert catalog.reload() is second  # read again, found unchanged: no new snapshot

    old = time.time_ns() - 3 * catalog_module.RACY_NS
    stamp[0] = (old, 100, 1, old)  # a settled stamp is trusted: the file is not read again
    assert catalog.reload().entries["alpha"].workflow.version == "1.0.2"
    write(path, "alpha", version="1.0.3")
    assert catalog.reload().entries["alpha"].workflow.version == "1.0.2"
    assert first.generation < second.generation


def test_touching_a_file_makes_no_new_snapshot(tmp_path: Path) -> None:
    path = write(tmp_path / "a.json", "alpha")
    catalog = catalog_of(tmp_path)
    before = catalog.reload()
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    assert catalog.reload() is before


def test_a_compiler_crash_in_one_file_is_reported_and_hides_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "a.json", "alpha")
    write(tmp_path / "b.json", "beta")
    real = compiler_module.compile_text  # the catalog compiles the bytes it read

    def compile_text(data: Any, file: str, **options: Any) -> Any:
        if Path(file).name == "a.json":
            raise RuntimeError("compiler bug")
        return real(data, file, **options)

    monkeypatch.setattr(compiler_module, "compile_text", compile_text)
    snapshot = catalog_of(tmp_path).reload()
    assert list(snapshot.entries) == ["beta"]
    (problem,) = snapshot.problems
    assert problem.file == str(tmp_path / "a.json") and "compiler bug" in problem.message
