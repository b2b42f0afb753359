"""A new user's first mistakes on the command line are one line naming the mistake
and where, with exit 2 and no traceback; every command's --help says what it does
and what each of its options is for."""

from __future__ import annotations

import argparse
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from handrail.cli import build_parser, main
from tests.helpers.server import clean_env

pytestmark = pytest.mark.slow

TIMEOUT = 20.0


def _handrail(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handrail", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_env(tmp_path),
        timeout=TIMEOUT,
    )


@pytest.mark.parametrize("command", ["serve", "dashboard"])
@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_a_port_that_is_no_port_number_is_one_line_and_exit_2(
    tmp_path: Path, command: str, port: str
) -> None:
    done = _handrail(tmp_path, command, "--port", port, "--no-bundled")
    assert done.returncode == 2
    assert done.stderr == (
        f"handrail {command}: argument --port: {port!r} is not a port number (0 to 65535)"
        f" (see `handrail {command} --help`)\n"
    )


def test_the_dashboard_names_itself_when_its_port_is_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _handrail(tmp_path, "dashboard", "--port", str(port), "--no-bundled")
    assert done.returncode == 2
    assert done.stderr == (
        f"handrail dashboard: port {port} on 127.0.0.1 is in use; choose another with --port\n"
    )


def test_a_host_that_cannot_be_found_is_named_with_the_option_to_fix(tmp_path: Path) -> None:
    done = _handrail(tmp_path, "serve", "--host", "no-such-host.invalid", "--port", "0", "--no-bundled")
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("handrail serve: host 'no-such-host.invalid' cannot be found (")
    assert line.endswith("); check --host")


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["serve", "--workers", "many"], "--workers"),
        (["serve", "--notify-after-failures", "0"], "--notify-after-failures: 0 is not a positive integer"),
        (["check"], "PATH"),
        (["walk"], "ID"),
        (["list", "--format", "yaml"], "--format"),
        (["no-such-command"], "'no-such-command'"),
        (["runs", "show"], "RUN"),
    ],
)
def test_a_usage_mistake_is_one_line_naming_it_and_where_help_is(
    tmp_path: Path, args: list[str], named: str
) -> None:
    done = _handrail(tmp_path, *args)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert named in line and "--help`)" in line
    assert "Traceback" not in done.stderr and done.stdout == ""


def _commands(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                found.append((*words, name))
                found.extend(_commands(command, (*words, name)))
    return found


def _parser_of(words: tuple[str, ...]) -> argparse.ArgumentParser:
    parser = build_parser()
    for word in words:
        (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = action.choices[word]
    return parser


def test_the_help_tests_reach_every_command() -> None:
    commands = _commands(build_parser())
    assert ("start",) in commands and ("runs", "approve") in commands and len(commands) >= 16


@pytest.mark.parametrize("words", _commands(build_parser()), ids=" ".join)
def test_each_command_help_says_what_it_does_and_what_every_option_is_for(
    words: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*words, "--help"]) == 0
    shown = capsys.readouterr().out
    parser = _parser_of(words)
    assert parser.description and parser.description in " ".join(shown.split())
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            named = action.option_strings or action.dest
            assert action.help, f"handrail {' '.join(words)}: {named} has no help"


@pytest.mark.parametrize("command", ["check", "list"])
def test_the_commands_ci_runs_say_their_exit_status_in_their_help(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--help"]) == 0
    assert "Exit status: 0" in capsys.readouterr().out


def test_the_command_list_gives_every_command_its_own_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    shown = capsys.readouterr().out
    for name in ("start", "dashboard", "check", "token"):
        assert re.search(rf"^    {name} +\w", shown, re.MULTILINE), shown


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (["--oidc-issuer", "https://idp.test"], "--oidc-issuer needs an http(s) URL and --oidc-client-id"),
        (["--oidc-issuer", "idp.test", "--oidc-client-id", "h"], "--oidc-issuer needs an http(s) URL"),
        (
            ["--oidc-issuer", "https://idp.test", "--oidc-client-id", "h", "--oidc-roles", "lead"],
            "ROLE=GROUP",
        ),
    ],
)
def test_single_sign_on_settings_that_cannot_be_used_stop_serve_naming_them(
    tmp_path: Path, given: list[str], said: str
) -> None:
    done = _handrail(tmp_path, "serve", "--port", "0", "--no-bundled", *given)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr
