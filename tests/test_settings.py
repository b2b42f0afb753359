"""The one settings object: yes/no words, and the command line over the environment
over the default."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from handrail.settings import NO_WORDS, VARIABLES, YES_WORDS, Settings, settings, yes_no

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("word", ["1", "true", "yes", "on", "TRUE", " Yes ", "On"])
def test_every_yes_word_reads_as_yes_in_any_case_with_spaces_around(word: str) -> None:
    assert yes_no(word, False) is True


@pytest.mark.parametrize("word", ["0", "false", "no", "off", "FALSE", " No ", "Off"])
def test_every_no_word_reads_as_no_in_any_case_with_spaces_around(word: str) -> None:
    assert yes_no(word, True) is False


@pytest.mark.parametrize("word", [None, "", "  ", "maybe", "y", "2"])
def test_an_unset_empty_or_unknown_word_leaves_the_default(word: str | None) -> None:
    assert yes_no(word, True) is True and yes_no(word, False) is False


def test_the_yes_and_no_words_are_the_union_of_what_each_variable_took_before() -> None:
    assert {"1", "true", "yes", "on"} == YES_WORDS and {"0", "false", "no", "off"} == NO_WORDS


def test_without_environment_or_options_every_setting_is_its_default() -> None:
    assert settings(argparse.Namespace(), {}) == Settings()
    assert Settings().include_bundled is True and Settings().allow_commands is False


def test_the_environment_sets_what_the_defaults_leave() -> None:
    read = settings(
        None,
        {
            "HANDRAIL_DATABASE_URL": "sqlite:////tmp/x.db",
            "HANDRAIL_TOKENS_FILE": "/etc/people.toml",
            "HANDRAIL_ALLOW_COMMANDS": "yes",
            "HANDRAIL_RUNS_ONLY": "on",
            "WORKFLOW_INCLUDE_BUNDLED": "off",
            "HANDRAIL_WORKFLOWS": "/a",
            "WORKFLOW_STORAGE_PATH": "/b",
            "WORKFLOW_GIT_REPOS": "git+file:///r.git, ,https://h/o/r.git",
        },
    )
    assert read.database_url == "sqlite:////tmp/x.db" and read.tokens_file == "/etc/people.toml"
    assert read.allow_commands and read.runs_only and not read.include_bundled
    assert read.workflow_paths == (("WORKFLOW_STORAGE_PATH", "/b"), ("HANDRAIL_WORKFLOWS", "/a"))
    assert read.git_repos == ("git+file:///r.git", "https://h/o/r.git")


def test_the_command_line_wins_over_the_environment() -> None:
    environ = {
        "HANDRAIL_DATABASE_URL": "sqlite:////tmp/env.db",
        "HANDRAIL_TOKENS_FILE": "/env/people.toml",
        "WORKFLOW_INCLUDE_BUNDLED": "yes",
        "HANDRAIL_ALLOW_COMMANDS": "no",
        "HANDRAIL_RUNS_ONLY": "false",
    }
    args = argparse.Namespace(
        database="sqlite:////tmp/cli.db",
        tokens="/cli/people.toml",
        no_bundled=True,
        allow_commands=True,
        runs_only=True,
    )
    read = settings(args, environ)
    assert read.database_url == "sqlite:////tmp/cli.db" and read.tokens_file == "/cli/people.toml"
    assert read.include_bundled is False and read.allow_commands is True and read.runs_only is True


def test_an_option_not_given_leaves_the_environments_value() -> None:
    args = argparse.Namespace(database=None, tokens=None, no_bundled=False, allow_commands=False)
    read = settings(args, {"HANDRAIL_DATABASE_URL": "sqlite:////tmp/env.db", "HANDRAIL_ALLOW_COMMANDS": "1"})
    assert read.database_url == "sqlite:////tmp/env.db" and read.allow_commands is True


def test_the_configuration_page_lists_every_variable_settings_reads() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text("utf-8")
    listed = re.findall(r"^\| `([A-Z_]+)` \|", page, re.MULTILINE)
    assert listed == list(VARIABLES)


def test_no_module_but_settings_reads_a_handrail_or_workflow_variable() -> None:
    reading = re.compile(r"""(environ|env|getenv)(\.get)?[(\[]\s*["'](HANDRAIL|WORKFLOW)_""")
    readers = [
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "src" / "handrail").rglob("*.py")
        if reading.search(path.read_text("utf-8"))
    ]
    assert readers == ["src/handrail/settings.py"]


def test_a_no_word_for_bundled_workflows_leaves_them_out_of_handrail_sources(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "sources"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "WORKFLOW_INCLUDE_BUNDLED": " OFF "},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("1. user ")


def test_the_providers_settings_come_from_the_environment_and_options_add_roles() -> None:
    env = {
        "HANDRAIL_OIDC_ISSUER": " https://idp.test ",
        "HANDRAIL_OIDC_CLIENT_ID": "handrail",
        "HANDRAIL_OIDC_CLIENT_SECRET": "s3cret",
        "HANDRAIL_OIDC_ROLES": "lead=leads qa=testers",
    }
    args = argparse.Namespace(oidc_roles=["admin=ops"], oidc_audience="https://h.test/mcp")
    read = settings(args, env)
    assert (read.oidc_issuer, read.oidc_client_id, read.oidc_client_secret) == (
        "https://idp.test",
        "handrail",
        "s3cret",
    )
    assert read.oidc_roles == ("lead=leads", "qa=testers", "admin=ops")
    assert read.oidc_audience == "https://h.test/mcp"
