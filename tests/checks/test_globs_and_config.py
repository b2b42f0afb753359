"""Globs of checks, and the server's check configuration."""

from __future__ import annotations

import pytest

from handrail.checks import check_config, parse_command, parse_commands_variable
from handrail.patterns.globs import GlobError, compile_glob


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("docs/adr/*.md", "docs/adr/0001.md", True),
        ("docs/adr/*.md", "docs/adr/old/0001.md", False),
        ("docs/**/*.md", "docs/0001.md", True),
        ("docs/**/*.md", "docs/a/b/c.md", True),
        ("**/*_test.py", "x_test.py", True),
        ("src/**", "src/a/b.py", True),
        ("?.txt", "a.txt", True),
        ("?.txt", "ab.txt", False),
        ("[!.]*", ".hidden", False),
        ("[a-c]x", "bx", True),
        ("*.md", ".notes.md", True),
        ("a+b(c).md", "a+b(c).md", True),
    ],
)
def test_a_glob_matches_relative_paths_folder_by_folder(glob: str, path: str, matches: bool) -> None:
    assert compile_glob(glob).matches(path) is matches


def test_a_glob_knows_the_literal_folder_a_search_starts_from() -> None:
    assert compile_glob("docs/adr/*.md").base == "docs/adr"
    assert compile_glob("**/*.md").base == ""
    assert compile_glob("README.md").base == ""


@pytest.mark.parametrize(
    ("glob", "words", "escapes"),
    [
        ("", "empty", False),
        ("/etc/passwd", "absolute", True),
        ("~/notes", "absolute", True),
        ("C:/x", "absolute", True),
        ("a/../../b", "`..`", True),
        ("a//b", "empty folder name", False),
        ("a/./b", "`.` segment", False),
        ("a/**b", "whole segment", False),
        ("a/[bc", "never closed", False),
        ("a/[]", "never closed", False),
        ("a/[+-9]", "holds `/`", False),
        ("a\\b", "separator", False),
    ],
)
def test_a_bad_glob_is_refused_with_the_reason(glob: str, words: str, escapes: bool) -> None:
    with pytest.raises(GlobError) as caught:
        compile_glob(glob)
    assert words in caught.value.message
    assert caught.value.escapes is escapes


def test_a_command_is_a_name_and_a_command_line_split_like_a_shell_would() -> None:
    assert parse_command('test=pytest -q "tests/a b"') == ("test", ("pytest", "-q", "tests/a b"))
    for bad, words in (
        ("test", "is not NAME=COMMAND"),
        ("1st=x", "is not a command name"),
        ("test=", "is empty"),
        ('test="unclosed', "No closing quotation"),
    ):
        with pytest.raises(ValueError, match=words):
            parse_command(bad)


def test_the_commands_variable_holds_the_same_words_as_the_options() -> None:
    found = parse_commands_variable("test=\"pytest -q\" lint='ruff check .'")
    assert found == {"test": ("pytest", "-q"), "lint": ("ruff", "check", ".")}
    assert parse_commands_variable("") == {}
    with pytest.raises(ValueError, match="HANDRAIL_COMMANDS"):
        parse_commands_variable("lint")


def test_options_override_the_environment_and_either_allows_commands() -> None:
    env = {"HANDRAIL_COMMANDS": 'test="make test" lint=ruff', "HANDRAIL_ALLOW_COMMANDS": "1"}
    config = check_config(commands=["test=pytest -q"], environ=env)
    assert config.allow_commands is True
    assert dict(config.commands) == {"test": ("pytest", "-q"), "lint": ("ruff",)}
    assert check_config(environ={}).allow_commands is False
    assert check_config(environ={"HANDRAIL_ALLOW_COMMANDS": "0"}).allow_commands is False
    assert check_config(allow_commands=True, environ={}).allow_commands is True
    assert check_config(environ={}).commands_configured is False


def test_a_configuration_cannot_be_changed_once_made() -> None:
    config = check_config(commands=["test=pytest"], environ={})
    with pytest.raises(TypeError):
        config.commands["evil"] = ("rm",)  # type: ignore[index]


def test_a_glob_with_many_wildcards_in_one_name_answers_in_linear_time() -> None:
    import time

    glob = compile_glob("src/*a*a*a*a*a*b")
    assert glob.matches("src/xaxaaaxab") is True
    started = time.monotonic()
    assert glob.matches("src/" + "a" * 5000) is False  # a backtracking engine takes ages here
    assert time.monotonic() - started < 5
