"""The tokens file and `handrail token`, through the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from handrail.cli import main
from handrail.service.people import People


def test_handrail_token_prints_a_new_token_and_the_line_that_admits_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["token", "carol"]) == 0
    out = capsys.readouterr().out.splitlines()
    token = out[0].removeprefix("token: ")
    line = out[1].removeprefix("line:  ")
    assert line.startswith("carol sha256:") and token not in line
    (tmp_path / "tokens").write_text(line + "\n", "utf-8")
    people = People.load(tmp_path / "tokens")
    assert people.identify(token) == "carol" and people.identify(token + "x") is None
    assert main(["token", "carol"]) == 0
    assert capsys.readouterr().out.splitlines()[0] != out[0]  # random each time


def test_handrail_token_refuses_the_name_a_server_would_refuse(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["token", "local"]) == 2
    shown = capsys.readouterr()
    assert shown.out == ""
    assert shown.err == (
        "handrail token: the name `local` is kept for HANDRAIL_TOKEN and runs started without a token;"
        " choose another\n"
    )


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("alice", "expected `NAME TOKEN` or `NAME sha256:HEX`, found 1 fields"),
        ("alice short-token", "at least 16 printable characters"),
        ("alice sha256:abc", "64 hexadecimal digits"),
        ("-alice 0123456789abcdef0123", "a name is 1 to 64 letters"),
        ("local 0123456789abcdef4567", "the name `local` is kept for HANDRAIL_TOKEN"),
    ],
)
def test_a_bad_tokens_line_stops_serve_naming_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, why: str
) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# people\nbob 0123456789abcdef0123\n{line}\n", "utf-8")
    assert main(["serve", "--no-bundled", "--port", "0", "--tokens", str(tokens)]) == 2
    err = capsys.readouterr().err
    assert f"{tokens}:3: " in err and why in err
    assert "short-token" not in err and "0123456789abcdef0123" not in err  # never echoed


def test_the_same_token_for_two_people_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("bob 0123456789abcdef0123\n\nalice 0123456789abcdef0123\n", "utf-8")
    assert main(["serve", "--port", "0", "--tokens", str(tokens)]) == 2
    assert f"{tokens}:3: this token is already given on line 1" in capsys.readouterr().err


def test_the_tokens_file_comes_from_the_environment_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HANDRAIL_TOKENS_FILE", str(tmp_path / "missing"))
    assert main(["serve", "--port", "0"]) == 2
    assert f"{tmp_path / 'missing'}: cannot read the tokens file" in capsys.readouterr().err


def test_a_person_may_hold_several_tokens_while_one_replaces_another(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("bob 0123456789abcdef0123\nbob 0123456789abcdef9999\n", "utf-8")
    people = People.load(tokens)
    assert people.identify("0123456789abcdef0123") == "bob" == people.identify("0123456789abcdef9999")
    assert len(people) == 1


def test_handrail_token_with_a_scope_and_roles_prints_a_line_that_gives_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["token", "dana", "--scope", "person", "--roles", "lead,qa"]) == 0
    out = capsys.readouterr().out.splitlines()
    token, line = out[0].removeprefix("token: "), out[1].removeprefix("line:  ")
    assert line.startswith("dana sha256:") and line.endswith(" roles=lead,qa scope=person")
    (tmp_path / "tokens").write_text(line + "\n", "utf-8")
    people = People.load(tmp_path / "tokens")
    assert people.credential(token) == ("dana", "person")
    assert people.roles_of("dana") == frozenset({"lead", "qa"})
    assert people.identify(token, scope="person") == "dana"
    assert people.identify(token, scope="agent") is None  # a person's token does not reach /mcp


def test_a_line_without_a_scope_is_good_for_both_as_tokens_were_before_scopes(tmp_path: Path) -> None:
    token = "an-old-line-token-0123456789"
    (tmp_path / "tokens").write_text(f"erin {token}\n", "utf-8")
    people = People.load(tmp_path / "tokens")
    assert people.credential(token) == ("erin", "both")
    assert people.identify(token, scope="agent") == people.identify(token, scope="person") == "erin"
    assert people.roles_of("erin") == frozenset()


def test_handrail_token_refuses_a_role_that_is_no_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["token", "dana", "--roles", "lead,,qa"]) == 2
    assert "--roles: each role is 1 to 64 letters" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("settings", "why"),
    [
        ("scope=admin", "`scope=` is given once, as agent, person or both"),
        ("scope=agent scope=person", "`scope=` is given once"),
        ("roles=lead roles=qa", "`roles=` is given once"),
        ("roles=,lead", "`roles=` is given once, as names"),
        ("team=red", "after the token a line may give only `roles=NAME,...` and `scope=agent|person|both`"),
    ],
)
def test_a_bad_scope_or_roles_field_stops_serve_naming_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], settings: str, why: str
) -> None:
    (tmp_path / "tokens").write_text(f"# people\nalice 0123456789abcdef0123 {settings}\n", "utf-8")
    assert main(["serve", "--tokens", str(tmp_path / "tokens"), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'tokens'}:2: " in err and why in err
