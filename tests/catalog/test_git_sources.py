"""Workflows from git (issue 17), with local repositories only: `git init`, commits,
`git+file://`. Never the network."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from handrail.catalog.git_sources import GitSpec, GitSpecError
from handrail.cli import main
from tests.helpers.http import HttpServer
from tests.runs.workflows import WORKFLOW_ID, build_feature

DEADLINE = 20.0  # generous: the machine may be loaded; a refresh is every 0.2 s


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, "utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def feature(version: str) -> str:
    return json.dumps(build_feature(version=version))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "team-workflows"
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    commit(folder, {"flows/feature.json": feature("1.0.0"), "README.md": "ours\n"}, "first")
    return folder


def until(what: Callable[[], Any], deadline: float = DEADLINE) -> Any:
    """`what()` once it is truthy; fails after `deadline` seconds."""
    end = time.monotonic() + deadline
    while True:
        value = what()
        if value or time.monotonic() > end:
            assert value, "not within the deadline"
            return value
        time.sleep(0.1)


def listing(server: HttpServer) -> dict[str, Any]:
    result: dict[str, Any] = server.rpc("workflow_list", {})["result"]
    return result


def entry(server: HttpServer) -> dict[str, Any] | None:
    return next((w for w in listing(server)["workflows"] if w["id"] == WORKFLOW_ID), None)


@pytest.mark.slow
def test_a_new_commit_is_served_within_the_refresh_interval_and_a_broken_one_keeps_the_last_good(
    repo: Path, tmp_path: Path
) -> None:
    first = git(repo, "rev-parse", "HEAD")
    spec = f"git+file://{repo}@main#flows"
    home = {"HANDRAIL_HOME": str(tmp_path / "home")}
    with HttpServer("--no-bundled", "--workflows", spec, "--git-refresh", "0.2", env=home) as server:
        served = until(lambda: entry(server))
        assert served["version"] == "1.0.0"
        assert served["source"] == {"kind": "git", "url": f"file://{repo}", "commit": first, "ref": "main"}

        second = commit(repo, {"flows/feature.json": feature("1.1.0")}, "a new version")
        served = until(lambda: (e := entry(server)) and e["version"] == "1.1.0" and e)
        assert served["source"]["commit"] == second

        commit(repo, {"flows/feature.json": "{ broken"}, "a broken file")
        broken = until(lambda: [d for d in listing(server)["diagnostics"] if d["code"] == "H001"])
        assert broken[0]["file"].endswith("feature.json")
        served = entry(server)  # the last good version, from the commit it came from
        assert served is not None and served["version"] == "1.1.0" and served["source"]["commit"] == second

        repo.rename(tmp_path / "gone")  # the remote becomes unreachable: the checkout stays
        failed = until(
            lambda: [d for d in listing(server)["diagnostics"] if "cannot fetch git source" in d["message"]]
        )
        assert failed[0]["severity"] == "warning" and "serving commit" in failed[0]["message"]
        assert entry(server) is not None
        assert server.client.get(f"{server.base}/healthz").json()["status"] == "ok"


@pytest.mark.slow
def test_an_unreachable_remote_is_reported_everywhere_and_does_not_stop_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    local = tmp_path / "local"
    local.mkdir()
    (local / "feature.json").write_text(feature("2.0.0"), "utf-8")
    missing = f"git+file://{tmp_path / 'no-such-repo'}"
    home = {"HANDRAIL_HOME": str(tmp_path / "home")}
    with HttpServer("--no-bundled", "--workflows", missing, "--workflows", str(local), env=home) as server:
        listed = until(lambda: entry(server) and listing(server))
        assert [w["version"] for w in listed["workflows"]] == ["2.0.0"]
        (problem,) = [d for d in listed["diagnostics"] if d["code"] == "H002"]
        assert "cannot fetch git source" in problem["message"]
        assert "no commit to serve yet" in problem["message"]
        assert server.proc.poll() is None

    monkeypatch.setenv("HANDRAIL_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert main(["sources", "--no-bundled", "--workflows", missing]) == 0
    out = capsys.readouterr().out
    assert "nothing fetched" in out and "cannot fetch: git fetch failed" in out
    assert main(["list", "--no-bundled", "--workflows", missing, "--format", "json"]) == 0
    diagnostics = json.loads(capsys.readouterr().out)["diagnostics"]
    assert any("cannot fetch git source" in d["message"] for d in diagnostics)


def test_workrails_workflow_git_repos_is_honoured_and_the_commit_is_listed(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HANDRAIL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WORKFLOW_GIT_REPOS", f"file://{repo}#flows, git+file://{tmp_path / 'nothing'}")
    monkeypatch.chdir(tmp_path)
    head = git(repo, "rev-parse", "HEAD")
    assert main(["list", "--no-bundled", "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    (row,) = found["workflows"]
    assert row["id"] == WORKFLOW_ID and row["git"]["commit"] == head
    assert any("nothing" in d["message"] for d in found["diagnostics"])
    assert main(["sources", "--no-bundled"]) == 0
    shown = [line for line in capsys.readouterr().out.splitlines() if "env:WORKFLOW_GIT_REPOS" in line]
    assert shown[0].endswith(f" file://{repo}  [1 workflow, commit {head}]")


def test_the_cache_serves_the_last_checkout_when_a_later_run_cannot_fetch(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HANDRAIL_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    spec = f"git+file://{repo}#flows"
    assert main(["list", "--no-bundled", "--workflows", spec]) == 0
    capsys.readouterr()
    repo.rename(tmp_path / "moved")
    assert main(["list", "--no-bundled", "--workflows", spec, "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [w["id"] for w in found["workflows"]] == [WORKFLOW_ID]
    assert "serving commit" in found["diagnostics"][0]["message"]


@pytest.mark.parametrize(
    ("text", "url", "ref", "subdir"),
    [
        ("git+https://host/org/repo.git", "https://host/org/repo.git", None, ""),
        ("git+https://host/org/repo.git@v1.2#flows/team", "https://host/org/repo.git", "v1.2", "flows/team"),
        ("git+ssh://git@host/org/repo.git@main", "ssh://git@host/org/repo.git", "main", ""),
        ("git+file:///srv/repo@feature/x", "file:///srv/repo", "feature/x", ""),
    ],
)
def test_a_git_source_names_its_repository_ref_and_folder(
    text: str, url: str, ref: str | None, subdir: str
) -> None:
    assert GitSpec.parse(text) == GitSpec(url, ref, subdir)


def test_a_password_in_a_git_url_is_never_shown() -> None:
    assert GitSpec.parse("git+https://me:s3cret@host/repo.git").shown == "https://me@host/repo.git"


@pytest.mark.parametrize(
    "text",
    ["git+ext::sh -c touch% /tmp/pwned", "git+ftp://host/repo", "git+https://host/r@", "git+file:///r#../up"],
)
def test_a_git_source_handrail_cannot_use_is_a_usage_error(
    text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(GitSpecError):
        GitSpec.parse(text)
    with pytest.raises(SystemExit) as stopped:  # as a command: exit status 2
        main(["list", "--no-bundled", "--workflows", text])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.startswith(f"handrail list: {text!r}: ")


def test_no_git_hook_runs_when_a_source_is_fetched_and_checked_out(repo: Path, tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    ran = tmp_path / "a-hook-ran"
    for name in ("post-checkout", "reference-transaction", "post-merge"):
        (hooks / name).write_text(f"#!/bin/sh\ntouch {ran}\n", "utf-8")
        (hooks / name).chmod(0o755)
    config = tmp_path / "gitconfig"  # the user's own config would run these hooks
    config.write_text(f"[core]\n\thooksPath = {hooks}\n[init]\n\ttemplateDir = {tmp_path}\n", "utf-8")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": str(config), "HANDRAIL_HOME": str(tmp_path / "home")}
    env.pop("WORKFLOW_GIT_REPOS", None)
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "list", "--no-bundled", "--workflows", f"git+file://{repo}#flows"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0 and WORKFLOW_ID in done.stdout, done.stderr
    assert not ran.exists()


def _list(tmp_path: Path, spec: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "HANDRAIL_HOME": str(tmp_path / "home"), **env}
    environ.pop("WORKFLOW_GIT_REPOS", None)
    return subprocess.run(
        [sys.executable, "-m", "handrail", "list", "--no-bundled", "--workflows", spec],
        capture_output=True,
        text=True,
        env=environ,
        cwd=tmp_path,
        timeout=60,
    )


@pytest.mark.slow
@pytest.mark.parametrize("subdir", ["workflows", "workflows/inner"])
def test_a_subdir_that_a_committed_link_leads_out_of_the_checkout_is_never_read(
    repo: Path, tmp_path: Path, subdir: str
) -> None:
    outside = tmp_path / "outside"
    secret = build_feature(version="1.0.0")
    secret["description"] = "SECRET-VALUE-FROM-OUTSIDE"
    for folder in (outside, outside / "inner"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "feature.json").write_text(json.dumps(secret), "utf-8")
        (folder / "broken.json").write_text('{"id": "SECRET-BROKEN-VALUE"', "utf-8")
    os.symlink(outside, repo / "workflows")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=Test", "-c", "user.email=t@e", "commit", "-q", "-m", "a link out")
    done = _list(tmp_path, f"git+file://{repo}#{subdir}")
    said = done.stdout + done.stderr
    assert WORKFLOW_ID not in done.stdout and "SECRET" not in said, said
    assert "H002" in said and f"#{subdir} leads outside the repository's checkout" in said, said


def test_git_for_a_source_gets_neither_the_servers_secrets_nor_the_users_git_configuration(
    repo: Path, tmp_path: Path
) -> None:
    marker, seen = tmp_path / "a-filter-ran", tmp_path / "environments"
    seen.mkdir()
    program = tmp_path / "filter.sh"
    program.write_text(f"#!/bin/sh\ntouch {marker}\nexec cat\n", "utf-8")
    program.chmod(0o755)
    user_config = tmp_path / "user.gitconfig"  # the user's own config, with a filter for every file
    user_config.write_text(f'[filter "x"]\n\tsmudge = {program}\n\tclean = {program}\n', "utf-8")
    commit(repo, {".gitattributes": "* filter=x\n"}, "attributes")
    wrapper = tmp_path / "bin"  # a `git` that notes its environment, then is git
    wrapper.mkdir()
    real_git = subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout.strip()
    (wrapper / "git").write_text(f'#!/bin/sh\nenv > "{seen}/$$"\nexec {real_git} "$@"\n', "utf-8")
    (wrapper / "git").chmod(0o755)
    done = _list(
        tmp_path,
        f"git+file://{repo}#flows",
        PATH=f"{wrapper}{os.pathsep}{os.environ['PATH']}",
        GIT_CONFIG_GLOBAL=str(user_config),
        HANDRAIL_TOKEN="server-secret-token",
    )
    assert done.returncode == 0 and WORKFLOW_ID in done.stdout, done.stderr
    noted = [p.read_text("utf-8") for p in seen.iterdir()]
    assert noted and not [text for text in noted if "HANDRAIL_" in text or "server-secret-token" in text]
    assert all("GIT_CONFIG_GLOBAL=/dev/null" in text for text in noted)
    assert not marker.exists()
