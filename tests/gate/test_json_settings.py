"""`handrail gate install|uninstall|doctor cursor|gemini|codex` on real settings files
that already hold other hooks: those stay byte for byte, installing twice changes
nothing, uninstalling leaves the file as it was, and the installed command answers
the harness's own hook input."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.gate.runs import GateWorld, as_the_harness_runs
from tests.gate.test_gate_install import handrail

CURSOR = """{
  "version": 1,
  "hooks": {
    "afterFileEdit": [
      {
        "command": "./hooks/format.sh"
      }
    ],
    "preToolUse": [
      {
        "command": "./hooks/guard.sh",
        "matcher": "Shell"
      }
    ]
  }
}
"""
GEMINI = """{
  "theme": "GitHub",
  "hooks": {
    "BeforeTool": [
      {
        "matcher": "run_shell_command",
        "hooks": [
          {
            "type": "command",
            "command": "$GEMINI_PROJECT_DIR/.gemini/hooks/guard.sh",
            "timeout": 5000
          }
        ]
      }
    ]
  },
  "mcpServers": {
    "github": {
      "command": "github-mcp-server"
    }
  }
}
"""
CODEX = """{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "python3 ~/.codex/hooks/guard.py",
            "timeout": 10
          }
        ]
      }
    ],
    "SessionStart": [
      {
        "matcher": "startup",
        "hooks": [
          {
            "type": "command",
            "command": "cat ~/.codex/notes.md"
          }
        ]
      }
    ]
  }
}
"""
FILES = {
    "cursor": (".cursor/hooks.json", CURSOR),
    "gemini": (".gemini/settings.json", GEMINI),
    "codex": (".codex/hooks.json", CODEX),
}
EVENTS = {
    "cursor": {
        "sessionStart",
        "preToolUse",
        "postToolUse",
        "postToolUseFailure",
        "beforeMCPExecution",
        "stop",
    },
    "gemini": {"SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "PreCompress"},
    "codex": {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"},
}


def handlers(harness: str, entries: list[dict[str, object]]) -> list[dict[str, object]]:
    if harness == "cursor":
        return entries
    return [h for group in entries for h in group["hooks"]]  # type: ignore[attr-defined]


@pytest.mark.parametrize("harness", FILES)
def test_install_adds_the_hooks_and_uninstall_leaves_the_other_hooks_byte_for_byte(
    world: GateWorld, harness: str
) -> None:
    name, other = FILES[harness]
    settings = world.workspace / name
    settings.parent.mkdir()
    settings.write_text(other)
    done = handrail(world, "gate", "install", harness, "--require-run", "gate-fixture")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"{settings}:"
    assert len([line for line in done.stdout.splitlines() if line.startswith("  added ")]) == len(
        EVENTS[harness]
    )
    installed = json.loads(settings.read_text())
    before = json.loads(other)
    for event, entries in before["hooks"].items():
        assert (
            installed["hooks"][event][: len(entries)] == entries
        )  # the user's entries come first, unchanged
    assert {k: v for k, v in installed.items() if k != "hooks"} == {
        k: v for k, v in before.items() if k != "hooks"
    }
    assert EVENTS[harness] <= set(installed["hooks"])
    ours = [
        h["command"]
        for event in EVENTS[harness]
        for h in handlers(harness, installed["hooks"][event])
        if "handrail" in str(h["command"])
    ]
    assert len(ours) == len(EVENTS[harness])
    assert all(f"--harness {harness} --require-run gate-fixture" in str(command) for command in ours)

    again = handrail(world, "gate", "install", harness, "--require-run", "gate-fixture")
    assert "nothing to change" in again.stdout
    assert json.loads(settings.read_text()) == installed

    removed = handrail(world, "gate", "uninstall", harness)
    assert removed.returncode == 0, removed.stderr
    assert len([line for line in removed.stdout.splitlines() if line.startswith("  removed ")]) == len(
        EVENTS[harness]
    )
    assert settings.read_text() == other


def test_a_new_cursor_hooks_file_gets_its_version_and_goes_to_the_home_folder_for_user_scope(
    world: GateWorld,
) -> None:
    done = handrail(world, "gate", "install", "cursor", "--scope", "user")
    assert done.returncode == 0, done.stderr
    written = json.loads((world.home / ".cursor" / "hooks.json").read_text())
    assert written["version"] == 1
    assert set(written["hooks"]) == EVENTS["cursor"]
    assert not (world.workspace / ".cursor").exists()


@pytest.mark.parametrize("harness", FILES)
def test_dry_run_says_what_it_would_add_and_writes_nothing(world: GateWorld, harness: str) -> None:
    done = handrail(world, "gate", "install", harness, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "dry run: nothing written" in done.stdout and "  added " in done.stdout
    assert not (world.workspace / FILES[harness][0]).parent.exists()


def test_a_hooks_entry_that_is_not_a_list_is_named_and_the_file_left_alone(world: GateWorld) -> None:
    settings = world.workspace / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"hooks": {"BeforeTool": "guard.sh"}}')
    done = handrail(world, "gate", "install", "gemini")
    assert done.returncode == 1
    assert done.stderr == f"handrail gate install: {settings}: `hooks.BeforeTool` must be a list\n"
    assert settings.read_text() == '{"hooks": {"BeforeTool": "guard.sh"}}'


def test_an_unknown_harness_is_named_with_the_ones_there_are(world: GateWorld) -> None:
    done = handrail(world, "gate", "install", "windsurf")
    assert done.returncode == 2
    assert "name the harness: claude-code, git, cursor, gemini, codex" in done.stderr


def test_doctor_reports_the_hooks_of_each_harness(world: GateWorld) -> None:
    handrail(world, "gate", "install", "gemini")
    handrail(world, "gate", "install", "codex", "--scope", "user")
    cursor = world.workspace / ".cursor" / "hooks.json"
    cursor.parent.mkdir()
    cursor.write_text(CURSOR)
    handrail(world, "gate", "install", "cursor")
    hooks = json.loads(cursor.read_text())
    del hooks["hooks"]["stop"]
    cursor.write_text(json.dumps(hooks))
    done = handrail(world, "gate", "doctor")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert f"gemini (project): installed in {world.workspace / '.gemini' / 'settings.json'}" in lines
    assert f"codex (user): installed in {world.home / '.codex' / 'hooks.json'}" in lines
    assert f"codex (project): not installed in {world.workspace / '.codex' / 'hooks.json'}" in lines
    assert f"cursor (project): missing stop in {cursor}" in lines


@pytest.mark.parametrize(
    ("harness", "event", "body", "refused"),
    [
        (
            "gemini",
            "BeforeTool",
            {"tool_name": "write_file", "tool_input": {"file_path": "src/cart.py"}},
            '"decision":"deny"',
        ),
        ("codex", "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "curl x"}}, '"deny"'),
        ("cursor", "preToolUse", {"tool_name": "Write", "tool_input": {"file_path": "a.py"}}, '"deny"'),
    ],
)
def test_the_installed_command_answers_the_harness_input(
    world: GateWorld, harness: str, event: str, body: dict[str, object], refused: str
) -> None:
    handrail(world, "gate", "install", harness)
    world.start("plan")
    installed = json.loads((world.workspace / FILES[harness][0]).read_text())["hooks"][event]
    command = next(str(h["command"]) for h in handlers(harness, installed) if "handrail" in str(h["command"]))
    place = (
        {"workspace_roots": [str(world.workspace)]} if harness == "cursor" else {"cwd": str(world.workspace)}
    )
    stdin = json.dumps({"hook_event_name": event, "session_id": "s", **place, **body})
    ran = as_the_harness_runs(world, command, stdin, str(Path(shlex.split(command)[0]).parent))
    assert ran.exit_code == 0, ran.stderr
    assert refused in ran.stdout and "step 'plan'" in ran.stdout
