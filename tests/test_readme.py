"""The README's commands run as written from a fresh clone: the cheap offline ones
(check, list, graph, sources on files in the repository) are run and their shown
output compared; the others name programs, files and modules that exist; no client
snippet spawns a bare `handrail`, which is not on a client's PATH after a venv install."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text("utf-8")
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```", README, re.MULTILINE | re.DOTALL)
LIBRARY = (ROOT / "docs" / "library.md").read_text("utf-8")  # the README links to it
# the README and the guides it links to, where install commands are also given
GUIDES = "\n".join([README, *(path.read_text("utf-8") for path in sorted((ROOT / "docs").glob("*.md")))])
CHEAP = {"check", "list", "graph", "sources"}  # offline, quick, read files of the clone


def _shell_lines() -> list[str]:
    lines = []
    for language, body in BLOCKS:
        if language == "sh":
            for line in body.splitlines():
                line = line.split(" #")[0].strip()
                if line and not line.startswith("#"):
                    lines.append(line)
    return lines


def _commands() -> list[list[str]]:
    """Every command of the sh blocks, `a && b` split, as words."""
    return [shlex.split(part) for line in _shell_lines() for part in line.split("&&")]


def _transcripts() -> list[tuple[str, str]]:
    """(`handrail ...` command, the output shown) of each `$ handrail` text block."""
    found = []
    for language, body in BLOCKS:
        if language == "text" and body.startswith("$ handrail "):
            command, _, output = body.partition("\n")
            found.append((command.removeprefix("$ "), output))
    return found


def _inline_commands() -> list[str]:
    """`handrail <cheap command> ...` in inline code, placeholders (PATH, ID) left out."""
    spans = re.findall(r"`(handrail [^`]+)`", README)
    runnable = {
        s
        for s in spans
        if s.split()[1] in CHEAP
        and not re.search(r"\b[A-Z]{2,}\b|\.\.\.|\||~", s)
        and (len(s.split()) > 2 or s.split()[1] in ("list", "sources"))  # else the name of a command
    }
    return sorted(runnable)


def _run(command: str, home: Path) -> subprocess.CompletedProcess[str]:
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ("WORKFLOW_STORAGE_PATH", "HANDRAIL_WORKFLOWS", "WORKFLOW_INCLUDE_BUNDLED")
    }
    environ["HOME"] = str(home)  # a fresh machine: no ~/.handrail of the tester's
    words = shlex.split(command)
    assert words[0] == "handrail"
    return subprocess.run(
        [sys.executable, "-m", "handrail", *words[1:]],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environ,
        timeout=60,
    )


def test_the_readme_has_the_commands_this_test_reads() -> None:
    assert len(_commands()) >= 8
    assert _transcripts()
    assert "handrail graph coding-task" in _inline_commands()


@pytest.mark.slow
@pytest.mark.parametrize("command, output", _transcripts(), ids=lambda v: v.split("\n")[0][:40])
def test_each_transcript_is_what_the_command_prints(command: str, output: str, tmp_path: Path) -> None:
    done = _run(command, tmp_path)
    assert done.stdout == output, done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("command", _inline_commands())
def test_each_cheap_command_named_in_the_text_runs(command: str, tmp_path: Path) -> None:
    done = _run(command, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout


def test_the_shell_commands_name_what_exists() -> None:
    scripts = Path(sys.executable).parent
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["optional-dependencies"]
    for words in _commands():
        program = words[0]
        if program.startswith(".venv/bin/"):  # installed by the README's own pip command
            name = program.removeprefix(".venv/bin/")
            assert (scripts / name).exists(), f"{program}: no such program in the venv"
        elif program == "bash":
            assert (ROOT / words[1]).is_file(), words
        else:
            assert program in ("python3", "claude"), f"a command the README does not install: {words}"
        if "-m" in words and program != "python3":
            module = words[words.index("-m") + 1]
            source = module.replace(".", "/") + ".py"
            assert any((ROOT / d / source).is_file() for d in (".", "src")), module
        for word in words:
            found = re.fullmatch(r"\.\[(\w+)\]", word)
            if found:
                assert found.group(1) in extras, word


def test_no_client_snippet_spawns_a_bare_handrail() -> None:
    for words in _commands():
        if words[0] == "claude":
            spawned = words[words.index("--") + 1]
            assert spawned != "handrail", words
            assert spawned.endswith("/.venv/bin/handrail"), words
    commands = []
    for language, body in BLOCKS:
        if language == "json":
            for server in _servers(json.loads(body)):
                commands.append(server["command"])
    assert commands
    for command in commands:
        assert command != "handrail"
        assert command.endswith("/.venv/bin/handrail") or command == "uvx", command


def test_no_install_command_fetches_another_project_named_handrail() -> None:
    """handrail is installed from its clone: a `pip install handrail...` would take
    whatever a package index holds under that name."""
    spans = re.findall(r"`([^`\n]*\bpipx? install [^`\n]*)`", GUIDES)
    installs = [shlex.split(span) for span in spans] + [w for w in _commands() if "install" in w]
    assert len(installs) >= 4
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["optional-dependencies"]
    for words in installs:
        for word in words[words.index("install") + 1 :]:
            if word.startswith("-"):
                continue
            assert word.startswith((".", "/")), f"{words} installs {word!r} from a package index"
            found = re.search(r"\[(\w+)\]$", word)
            assert found is None or found.group(1) in extras, words


def _servers(config: dict[str, Any]) -> list[dict[str, Any]]:
    servers = config.get("mcpServers") or config.get("servers") or {}
    return list(servers.values())


def test_the_library_example_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", LIBRARY, re.MULTILINE | re.DOTALL)
    (code,) = [body for language, body in blocks if language == "python"]
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("WORKFLOW_STORAGE_PATH", "HANDRAIL_WORKFLOWS"):
        monkeypatch.delenv(name, raising=False)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "docs/library.md", "exec"), {})
    lines = printed.getvalue().splitlines()
    assert lines[0] == "understand | Understand the task and the code it touches"
    assert lines[1].startswith("Workflow: Coding Task")
    assert lines[2].startswith("('List the acceptance criteria")
    assert lines[3].startswith("False | List the acceptance criteria")
    assert lines[3].endswith("| Include the exact text 'Acceptance criteria' (case matters).")
    assert lines[4] == "plan False False"  # the next step, from what was sent back


def test_the_result_types_the_readme_documents_are_exported_from_handrail() -> None:
    import dataclasses

    import handrail
    import handrail.engine

    section = LIBRARY
    documented = re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE)
    assert documented == ["NextResult", "StepView", "Guidance", "LoopView", "Verdict"]
    for name in [*documented, "MissingContext", "LoopPosition"]:
        kind = getattr(handrail, name)
        assert kind is getattr(handrail.engine, name)
        assert name in handrail.__all__
        assert dataclasses.is_dataclass(kind) and kind.__dataclass_params__.frozen  # type: ignore[attr-defined]
        assert kind.__doc__ and not kind.__doc__.startswith(name + "(")  # its own docstring
        fields = {f.name for f in dataclasses.fields(kind)}
        row = re.search(rf"^\| `{name}` \|(.*)$", section, re.MULTILINE)
        if row is not None:  # the table names every field of the type
            assert fields <= set(re.findall(r"`(\w+)`", row.group(1))), name


def test_the_readme_keeps_to_what_a_user_does_and_leaves_the_figures_to_docs() -> None:
    # the how-to of each capability and a row per command; depth goes to docs/
    assert len(README.splitlines()) < 500
    before_development = README.split("\n## Development\n")[0]
    assert "benchmarks." not in before_development  # each figure comes with its benchmark: in docs/
    assert "](docs/performance.md)" in before_development
    performance = (ROOT / "docs" / "performance.md").read_text("utf-8")
    assert "python -m benchmarks.run" in performance and "benchmarks.http_keepalive" in performance


def test_every_relative_link_of_the_readme_and_the_docs_resolves() -> None:
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text("utf-8")):
            if not target.startswith(("http://", "https://")) and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_the_command_table_lists_every_command() -> None:
    from handrail.cli import COMMANDS

    section = README.split("## The command line", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `handrail ([a-z-]+)", section, re.MULTILINE)
    assert sorted(set(rows)) == sorted(COMMANDS), set(COMMANDS) ^ set(rows)
