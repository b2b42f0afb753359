"""`handrail list`, `handrail sources` and `handrail init`, run as real commands with
HOME and the working folder pointed at temporary folders (the real ones are never read)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from handrail._resources import resource

pytestmark = pytest.mark.slow

ENV_VARIABLES = ("WORKFLOW_STORAGE_PATH", "HANDRAIL_WORKFLOWS", "WORKFLOW_INCLUDE_BUNDLED")


def workflow(wid: str, *, version: str = "1.0.0", steps: int = 2) -> dict[str, Any]:
    return {
        "id": wid,
        "name": f"Workflow {wid}",
        "description": f"The {wid} workflow.",
        "version": version,
        "steps": [{"id": f"step-{i}", "title": f"Step {i}", "prompt": "Do it."} for i in range(steps)],
    }


def write(path: Path, wid: str, **kwargs: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(workflow(wid, **kwargs), indent=2), encoding="utf-8")
    return path


BROKEN = '{\n  "id": "broken",\n  "steps": [\n    {"id": oops}\n  ]\n}\n'


class Place:
    """A private HOME and working folder for one test."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.cwd = root / "project"
        self.home.mkdir()
        self.cwd.mkdir()
        self.user = self.home / ".handrail" / "workflows"
        self.project = self.cwd / "workflows"

    def run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        environ = {k: v for k, v in os.environ.items() if k not in ENV_VARIABLES}
        environ["HOME"] = str(self.home)
        environ.pop("HANDRAIL_HOME", None)  # the default: ~/.handrail of this private HOME
        environ["PYTHONIOENCODING"] = "utf-8"
        environ.update(env or {})
        return subprocess.run(
            [sys.executable, "-m", "handrail", *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            cwd=self.cwd,
            env=environ,
            timeout=30,
        )


@pytest.fixture
def place(tmp_path: Path) -> Place:
    return Place(tmp_path)


# -- handrail list --------------------------------------------------------------------------


def test_list_shows_each_workflow_and_the_broken_files(place: Place, tmp_path: Path) -> None:
    write(place.user / "alpha.json", "alpha", version="1.2.3", steps=3)
    write(place.project / "nested" / "beta.json", "beta", version="0.1.0", steps=1)
    (place.project / "broken.json").write_text(BROKEN, encoding="utf-8")
    extra = write(tmp_path / "extra" / "gamma.json", "gamma")
    done = place.run("list", "--no-bundled", "--workflows", str(extra))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    rows = {line.split()[0]: line.split() for line in lines if line.startswith(("alpha", "beta", "gamma"))}
    assert rows["alpha"][:5] == ["alpha", "1.2.3", "3", "steps", "user"]
    assert rows["beta"][:5] == ["beta", "0.1.0", "1", "steps", "project"]
    assert rows["gamma"][:5] == ["gamma", "1.0.0", "2", "steps", "cli"]
    assert "Workflow alpha" in done.stdout
    assert "1 problem in workflow files:" in done.stderr  # problems on stderr, the listing on stdout
    assert f"{place.project / 'broken.json'}:4:" in done.stderr  # file and line
    assert "broken.json" not in done.stdout
    assert lines[-1] == "3 workflows"
    assert done.stderr.count("broken.json") == 1  # each problem is printed once


def test_list_and_check_both_exit_2_for_a_path_that_is_not_there(place: Place, tmp_path: Path) -> None:
    missing = tmp_path / "not-there"
    listed = place.run("list", "--no-bundled", "--workflows", str(missing))
    assert listed.returncode == 2, listed.stderr
    assert f"warning H002 no such file or folder: {missing}" in listed.stderr
    assert listed.stdout.splitlines()[-1] == "0 workflows"
    checked = place.run("check", str(missing))
    assert checked.returncode == 2
    assert checked.stderr == f"handrail check: no such file or folder: {missing}\n"
    helps = (("list", "2 when a --workflows path does not exist"), ("check", "2 a path not found"))
    for command, said in helps:
        assert said in " ".join(place.run(command, "--help").stdout.split())


def test_walk_and_graph_say_that_the_workflows_file_is_broken_and_why(place: Place) -> None:
    place.project.mkdir()
    (place.project / "broken.json").write_text(BROKEN, encoding="utf-8")
    for command in ("walk", "graph"):
        done = place.run(command, "broken", "--no-bundled")
        assert done.returncode == 1
        said = done.stderr.splitlines()[-1]  # after the catalog's own report of the file
        assert said.startswith(
            f"handrail {command}: `broken` is in a broken file: {place.project / 'broken.json'}:4:12: error"
        ), done.stderr
        assert "did you mean" not in done.stderr


def test_list_as_json(place: Place) -> None:
    write(place.project / "alpha.json", "alpha", version="2.0.0", steps=3)
    (place.project / "broken.json").write_text(BROKEN, encoding="utf-8")
    done = place.run("list", "--no-bundled", "--format", "json")
    assert done.returncode == 1, done.stderr
    listing = json.loads(done.stdout)
    assert listing["workflows"] == [
        {
            "id": "alpha",
            "name": "Workflow alpha",
            "version": "2.0.0",
            "source": "project",
            "file": str(place.project / "alpha.json"),
            "steps": 3,
            "stale": False,
        }
    ]
    (problem,) = listing["diagnostics"]
    assert problem["file"] == str(place.project / "broken.json")
    assert (problem["line"], problem["severity"]) == (4, "error")
    assert problem["column"] >= 1 and problem["message"]


def test_list_includes_the_bundled_set_unless_told_not_to(place: Place) -> None:
    bundled = {json.loads(p.read_text(encoding="utf-8"))["id"] for p in resource("workflows").rglob("*.json")}
    write(place.project / "alpha.json", "alpha")

    def ids(*args: str, env: dict[str, str] | None = None) -> set[str]:
        done = place.run("list", "--format", "json", *args, env=env)
        assert done.returncode == 0, done.stderr
        return {w["id"] for w in json.loads(done.stdout)["workflows"]}

    assert ids() == bundled | {"alpha"}
    assert ids("--no-bundled") == {"alpha"}
    assert ids(env={"WORKFLOW_INCLUDE_BUNDLED": "false"}) == {"alpha"}


def test_list_refuses_files_over_max_file_size(place: Place) -> None:
    write(place.project / "small.json", "small", steps=1)
    (place.project / "big.json").write_text(json.dumps(workflow("big")) + " " * 5000, encoding="utf-8")
    done = place.run("list", "--no-bundled", "--format", "json", "--max-file-size", "2000")
    listing = json.loads(done.stdout)
    assert [w["id"] for w in listing["workflows"]] == ["small"]
    (problem,) = listing["diagnostics"]
    assert problem["file"] == str(place.project / "big.json") and "2000 bytes" in problem["message"]
    default = json.loads(place.run("list", "--no-bundled", "--format", "json").stdout)
    assert sorted(w["id"] for w in default["workflows"]) == ["big", "small"]


def test_list_reads_both_environment_variables_as_path_lists(place: Place, tmp_path: Path) -> None:
    a, b, c = (
        write(tmp_path / name / f"{name}.json", f"env-{name}").parent for name in ("aaa", "bbb", "ccc")
    )
    env = {"WORKFLOW_STORAGE_PATH": f"{a}{os.pathsep}{b}", "HANDRAIL_WORKFLOWS": str(c)}
    listing = json.loads(place.run("list", "--no-bundled", "--format", "json", env=env).stdout)
    sources = {w["id"]: w["source"] for w in listing["workflows"]}
    assert sources == {
        "env-aaa": "env:WORKFLOW_STORAGE_PATH",
        "env-bbb": "env:WORKFLOW_STORAGE_PATH",
        "env-ccc": "env:HANDRAIL_WORKFLOWS",
    }


# -- handrail sources -----------------------------------------------------------------------


def test_sources_in_precedence_order_with_existence_counts_and_overrides(
    place: Place, tmp_path: Path
) -> None:
    write(place.user / "shared.json", "shared", version="1.0.0")
    write(place.user / "mine.json", "mine")
    write(place.project / "shared.json", "shared", version="2.0.0")
    storage, missing = tmp_path / "storage", tmp_path / "missing"
    write(storage / "shared.json", "shared", version="3.0.0")
    cli = write(tmp_path / "cli" / "one.json", "mine", version="9.0.0")
    env = {"WORKFLOW_STORAGE_PATH": str(storage), "HANDRAIL_WORKFLOWS": f"{missing}"}
    done = place.run("sources", "--no-bundled", "--workflows", str(cli), env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    ranked = [line for line in lines if line[:1].isdigit()]
    assert [line.split()[:2] for line in ranked] == [
        ["1.", "user"],
        ["2.", "user"],
        ["3.", "project"],
        ["4.", "env:WORKFLOW_STORAGE_PATH"],
        ["5.", "env:HANDRAIL_WORKFLOWS"],
        ["6.", "cli"],
    ]
    assert ranked[0].endswith(f"{place.home / '.workrail' / 'workflows'}  [missing]")
    assert ranked[1].endswith(f"{place.user}  [2 workflows]")
    assert ranked[2].endswith(f"{place.project}  [1 workflow]")
    assert ranked[3].endswith(f"{storage}  [1 workflow]")
    assert ranked[4].endswith(f"{missing}  [missing]")
    assert ranked[5].endswith(f"{cli}  [1 workflow]")

    def overrides_after(rank: int) -> list[str]:
        start = lines.index(ranked[rank - 1]) + 1
        found = []
        for line in lines[start:]:
            if not line.startswith("     overrides"):
                break
            found.append(line.strip())
        return found

    assert overrides_after(2) == []
    assert overrides_after(3) == [f"overrides `shared` from user ({place.user})"]
    assert overrides_after(4) == [f"overrides `shared` from project ({place.project})"]
    assert overrides_after(6) == [f"overrides `mine` from user ({place.user})"]
    assert "Later sources take precedence" in done.stdout


def test_sources_lists_the_bundled_set_first(place: Place) -> None:
    done = place.run("sources")
    first = next(line for line in done.stdout.splitlines() if line.startswith("1."))
    assert first.split()[1] == "bundled" and str(resource("workflows")) in first
    off = place.run("sources", env={"WORKFLOW_INCLUDE_BUNDLED": "false"})
    names = [line.split()[1] for line in off.stdout.splitlines() if line[:1].isdigit()]
    assert names == ["user", "user", "project"]


# -- handrail init --------------------------------------------------------------------------


def test_init_creates_a_sample_that_passes_check_and_says_what_next(place: Place, tmp_path: Path) -> None:
    folder = tmp_path / "made" / "here"
    done = place.run("init", "--dir", str(folder))
    assert done.returncode == 0, done.stderr
    sample = folder / "my-first-workflow.json"
    assert sample.is_file()
    assert f"created {sample}" in done.stdout
    assert "Next:" in done.stdout
    advised = [line.split("    #")[0].split() for line in done.stdout.split("Next:\n")[1].splitlines()]
    assert [words[:2] for words in advised] == [
        ["handrail", "check"],
        ["handrail", "walk"],
        ["handrail", "list"],
        ["claude", "mcp"],
    ]
    assert advised[-1][-3:] == ["start", "--workflows", str(folder)]
    for words in advised[:3]:  # each runs as shown, and finds the sample
        shown = place.run(*words[1:])
        assert shown.stderr == "" and shown.returncode == (1 if words[1] == "walk" else 0), shown.stdout
        assert "my-first-workflow" in shown.stdout or "0 errors" in shown.stdout
    assert "Walking `my-first-workflow`" in place.run(*advised[1][1:]).stdout  # (no input: it stops there)

    check = place.run("check", str(folder))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "0 errors, 0 warnings" in check.stdout

    before = sample.read_bytes()
    sample.write_text(sample.read_text(encoding="utf-8").replace("0.1.0", "0.1.1"), encoding="utf-8")
    edited = sample.read_bytes()
    again = place.run("init", "--dir", str(folder))  # idempotent: an existing file is left alone
    assert again.returncode == 0, again.stderr
    assert "already exists" in again.stdout and "Next:" in again.stdout
    assert sample.read_bytes() == edited != before
    assert sorted(p.name for p in folder.iterdir()) == ["my-first-workflow.json"]


def test_init_defaults_to_the_user_folder_which_list_then_serves(place: Place) -> None:
    done = place.run("init")
    assert done.returncode == 0, done.stderr
    assert (place.user / "my-first-workflow.json").is_file()
    listing = json.loads(place.run("list", "--no-bundled", "--format", "json").stdout)
    assert [(w["id"], w["source"]) for w in listing["workflows"]] == [("my-first-workflow", "user")]
    assert listing["diagnostics"] == []


def test_init_reports_a_folder_it_cannot_create(place: Place, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    done = place.run("init", "--dir", str(blocker / "workflows"))
    assert done.returncode == 2
    assert done.stderr == f"handrail init: cannot create {blocker / 'workflows'}: Not a directory\n"
    assert done.stdout == ""
