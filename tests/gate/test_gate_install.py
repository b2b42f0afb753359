"""`handrail gate install|uninstall|doctor` on real settings files and a real git
repository: other hooks and settings are kept byte for byte, installing twice changes
nothing, uninstalling leaves the file as it was."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.gate.runs import GateWorld, claude_input

OTHER_SETTINGS = (
    "{\n"
    '  "permissions": {\n'
    '    "allow": [\n'
    '      "Bash(npm test)"\n'
    "    ]\n"
    "  },\n"
    '  "hooks": {\n'
    '    "PreToolUse": [\n'
    "      {\n"
    '        "matcher": "Bash",\n'
    '        "hooks": [\n'
    "          {\n"
    '            "type": "command",\n'
    '            "command": "./scripts/check-bash.sh"\n'
    "          }\n"
    "        ]\n"
    "      }\n"
    "    ],\n"
    '    "Notification": [\n'
    "      {\n"
    '        "hooks": [\n'
    "          {\n"
    '            "type": "command",\n'
    '            "command": "notify-send claude"\n'
    "          }\n"
    "        ]\n"
    "      }\n"
    "    ]\n"
    "  },\n"
    '  "model": "opus"\n'
    "}\n"
)


def handrail(world: GateWorld, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = world.env()
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return subprocess.run(
        [sys.executable, "-m", "handrail", *args],
        cwd=world.workspace,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_install_adds_its_hooks_and_keeps_every_other_byte_of_the_settings(world: GateWorld) -> None:
    settings = world.workspace / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(OTHER_SETTINGS)
    done = handrail(world, "gate", "install", "claude-code", "--require-run", "gate-fixture")
    assert done.returncode == 0, done.stderr
    assert "added PreToolUse" in done.stdout and "added Stop" in done.stdout
    installed = json.loads(settings.read_text())
    assert installed["hooks"]["PreToolUse"][0] == json.loads(OTHER_SETTINGS)["hooks"]["PreToolUse"][0]
    ours = installed["hooks"]["PreToolUse"][1]
    assert ours["matcher"] == "*"
    assert "gate pre-tool-use --harness claude-code --require-run gate-fixture" in ours["hooks"][0]["command"]
    assert set(installed["hooks"]) == {
        "PreToolUse",
        "Notification",
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
        "SubagentStop",
        "ConfigChange",
    }
    # idempotent
    again = handrail(world, "gate", "install", "claude-code", "--require-run", "gate-fixture")
    assert "nothing to change" in again.stdout
    assert json.loads(settings.read_text()) == installed
    # uninstall: the file as it was, byte for byte
    removed = handrail(world, "gate", "uninstall", "claude-code")
    assert removed.returncode == 0 and "removed Stop" in removed.stdout
    assert settings.read_text() == OTHER_SETTINGS


def test_install_with_dry_run_writes_nothing(world: GateWorld) -> None:
    done = handrail(world, "gate", "install", "claude-code", "--dry-run")
    assert "dry run" in done.stdout and "added SessionStart" in done.stdout
    assert not (world.workspace / ".claude").exists()


def test_user_scope_writes_the_home_settings(world: GateWorld) -> None:
    done = handrail(world, "gate", "install", "claude-code", "--scope", "user")
    assert done.returncode == 0, done.stderr
    assert "Stop" in json.loads((world.home / ".claude" / "settings.json").read_text())["hooks"]


def test_settings_that_are_not_json_are_named_and_left_alone(world: GateWorld) -> None:
    settings = world.workspace / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{ not json")
    done = handrail(world, "gate", "install", "claude-code")
    assert done.returncode == 1
    assert done.stderr.startswith(f"handrail gate install: {settings} is not JSON")
    assert settings.read_text() == "{ not json"


def test_git_install_chains_an_existing_hook_and_uninstall_restores_it(world: GateWorld) -> None:
    subprocess.run(["git", "init", "-q", str(world.workspace)], check=True)
    hooks = world.workspace / ".git" / "hooks"
    existing = "#!/bin/sh\necho own-pre-push-saw: $(cat)\n"
    (hooks / "pre-push").write_text(existing)
    (hooks / "pre-push").chmod(0o755)
    done = handrail(world, "gate", "install", "git")
    assert done.returncode == 0, done.stderr
    assert {p.name for p in hooks.iterdir() if not p.name.endswith(".sample")} == {
        "pre-push",
        "pre-commit",
        "commit-msg",
        "reference-transaction",
    }
    # the existing hook still runs after the gate and still reads git's refs on stdin
    refs = f"refs/heads/main {'1' * 40} refs/heads/main {'0' * 40}\n"
    ran = subprocess.run(
        [str(hooks / "pre-push"), "origin", "url"],
        cwd=world.workspace,
        env={**world.env(), "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]},
        input=refs,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "own-pre-push-saw: " + refs.strip() + "\n"
    assert "nothing to change" in handrail(world, "gate", "install", "git").stdout
    removed = handrail(world, "gate", "uninstall", "git")
    assert removed.returncode == 0
    assert (hooks / "pre-push").read_text() == existing
    assert not (hooks / "pre-commit").exists()


def test_doctor_says_what_is_installed_and_whether_the_store_answers(world: GateWorld) -> None:
    subprocess.run(["git", "init", "-q", str(world.workspace)], check=True)
    handrail(world, "gate", "install", "claude-code")
    world.start("plan")
    done = handrail(world, "gate", "doctor")
    assert done.returncode == 0, done.stderr
    assert "claude-code (project): installed" in done.stdout
    assert "claude-code (user): not installed" in done.stdout
    assert "git: no hooks installed" in done.stdout
    assert f"active run {world.run_id} (gate-fixture) holds this folder" in done.stdout


def test_install_with_a_server_and_http_hooks_writes_http_hooks_and_keeps_every_other_byte(
    world: GateWorld,
) -> None:
    settings = world.workspace / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(OTHER_SETTINGS)
    server = "http://127.0.0.1:8765"
    http = ("--server", server, "--http-hooks", "--require-run", "gate-fixture")
    done = handrail(world, "gate", "install", "claude-code", *http)
    assert done.returncode == 0, done.stderr
    installed = json.loads(settings.read_text())
    assert installed["hooks"]["PreToolUse"][0] == json.loads(OTHER_SETTINGS)["hooks"]["PreToolUse"][0]
    ours = installed["hooks"]["PreToolUse"][1]["hooks"][0]
    assert ours == {
        "type": "http",
        "url": f"{server}/hooks/claude-code?require-run=gate-fixture",
        "timeout": 30,
        "headers": {"Authorization": "Bearer $HANDRAIL_TOKEN"},
        "allowedEnvVars": ["HANDRAIL_TOKEN"],
    }
    assert {installed["hooks"][name][-1]["hooks"][0]["type"] for name in ("Stop", "UserPromptSubmit")} == {
        "http"
    }
    # the settings files are where Claude Code runs, not on the server: no ConfigChange hook
    assert "ConfigChange" not in installed["hooks"]
    # Claude Code runs SessionStart only as a command: that one asks the server
    start = installed["hooks"]["SessionStart"][0]["hooks"][0]
    assert start["type"] == "command" and f"--server {server}" in start["command"]
    assert "nothing to change" in handrail(world, "gate", "install", "claude-code", *http).stdout
    assert "installed" in handrail(world, "gate", "doctor").stdout
    removed = handrail(world, "gate", "uninstall", "claude-code")
    assert removed.returncode == 0 and "removed Stop: http://" in removed.stdout
    assert settings.read_text() == OTHER_SETTINGS


def test_installing_http_hooks_over_command_hooks_replaces_them(world: GateWorld) -> None:
    handrail(world, "gate", "install", "claude-code")
    done = handrail(
        world, "gate", "install", "claude-code", "--server", "http://127.0.0.1:8765", "--http-hooks"
    )
    assert "replaced PreToolUse: http://127.0.0.1:8765/hooks/claude-code" in done.stdout
    hooks = json.loads((world.workspace / ".claude" / "settings.json").read_text())["hooks"]
    assert all(len(groups) == 1 for groups in hooks.values())


def test_a_token_is_never_written_into_a_settings_file(world: GateWorld) -> None:
    done = handrail(world, "gate", "install", "claude-code", "--server", "http://h:1", "--token", "s3cret")
    assert done.returncode == 1 and "set HANDRAIL_TOKEN where the harness runs" in done.stderr
    assert not (world.workspace / ".claude").exists()


# -- the hooks name the program that installed them ----------------------------------------
MINIMAL = {"PATH": "/usr/bin:/bin"}  # a harness started without the venv on its PATH


def venv_handrail() -> Path:
    """The `handrail` script of the venv the tests run in, as the README installs it."""
    script = Path(sys.executable).parent / "handrail"
    assert script.is_file(), f"{script}: the venv has no handrail script"
    return script


def run_as(world: GateWorld, program: Path | str, *args: str) -> subprocess.CompletedProcess[str]:
    """`PROGRAM ARGS` with PATH=/usr/bin:/bin: no venv, no handrail on PATH."""
    return subprocess.run(
        [str(program), *args],
        cwd=world.workspace,
        env={**world.env(), **MINIMAL},
        capture_output=True,
        text=True,
        timeout=60,
    )


def installed_command(world: GateWorld, event: str) -> str:
    settings = json.loads((world.workspace / ".claude" / "settings.json").read_text())
    command: str = settings["hooks"][event][0]["hooks"][0]["command"]
    return command


def test_a_hook_installed_by_the_venvs_handrail_answers_where_path_has_no_venv(world: GateWorld) -> None:
    done = run_as(world, venv_handrail(), "gate", "install", "claude-code")
    assert done.returncode == 0, done.stderr
    command = installed_command(world, "PreToolUse")
    assert command.startswith(str(venv_handrail()) + " gate pre-tool-use ")
    world.start("plan")
    edit = claude_input(
        world, "PreToolUse", tool_name="Edit", tool_input={"file_path": str(world.workspace / "cart.py")}
    )
    ran = subprocess.run(
        ["/bin/sh", "-c", command],
        input=edit,
        cwd=world.workspace,
        env={**world.env(), **MINIMAL},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_git_hooks_installed_by_the_venvs_handrail_judge_commits_where_path_has_no_venv(
    world: GateWorld,
) -> None:
    subprocess.run(["git", "init", "-q", str(world.workspace)], check=True)
    done = run_as(world, venv_handrail(), "gate", "install", "git")
    assert done.returncode == 0, done.stderr
    assert str(venv_handrail()) in (world.workspace / ".git" / "hooks" / "pre-commit").read_text()
    world.start("implement")
    (world.workspace / "cart.py").write_text("TOTAL = 1\n")
    git = ["git", "-c", "user.name=Ana", "-c", "user.email=ana@example.com"]
    subprocess.run([*git, "add", "cart.py"], cwd=world.workspace, check=True)
    refused = run_as(world, "/usr/bin/git", *git[1:], "commit", "-q", "-m", "cart")
    assert refused.returncode != 0
    assert "commit after the tests step" in refused.stderr
    assert "not found" not in refused.stderr
    world.complete("implement")
    allowed = run_as(world, "/usr/bin/git", *git[1:], "commit", "-q", "-m", "cart")
    assert allowed.returncode == 0, allowed.stderr
    log = subprocess.run(["git", "log", "--format=%s"], cwd=world.workspace, capture_output=True, text=True)
    assert log.stdout == "cart\n"


def a_handrail_that_goes_away(world: GateWorld) -> Path:
    """A copy of the venv's handrail script elsewhere: a venv that will be moved."""
    copy = world.root / "old-venv" / "bin" / "handrail"
    copy.parent.mkdir(parents=True)
    shutil.copy(venv_handrail(), copy)
    return copy


def test_doctor_fails_naming_a_hook_whose_program_was_deleted(world: GateWorld) -> None:
    subprocess.run(["git", "init", "-q", str(world.workspace)], check=True)
    old = a_handrail_that_goes_away(world)
    assert run_as(world, old, "gate", "install", "claude-code").returncode == 0
    assert run_as(world, old, "gate", "install", "git").returncode == 0
    answered = run_as(world, venv_handrail(), "gate", "doctor")
    assert answered.returncode == 0, answered.stderr
    assert f"hooks answer with PATH=/usr/bin:/bin: {old}" in answered.stdout
    old.unlink()
    done = run_as(world, venv_handrail(), "gate", "doctor")
    assert done.returncode == 1
    assert "claude-code (project) PreToolUse" in done.stderr and "git pre-commit" in done.stderr
    assert f"`{old} gate" in done.stderr and "does not resolve with PATH=/usr/bin:/bin" in done.stderr


def test_doctor_fails_for_a_bare_handrail_the_harness_path_cannot_find(world: GateWorld) -> None:
    settings = world.workspace / ".claude" / "settings.json"
    settings.parent.mkdir()
    bare = {"type": "command", "command": "handrail gate stop --harness claude-code", "timeout": 30}
    settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [bare]}]}}))
    done = run_as(world, venv_handrail(), "gate", "doctor")
    assert done.returncode == 1
    assert "claude-code (project) Stop: `handrail gate stop --harness claude-code`" in done.stderr
    assert "exit 127" in done.stderr


def test_installing_again_after_the_venv_moved_says_which_hooks_pointed_nowhere(world: GateWorld) -> None:
    subprocess.run(["git", "init", "-q", str(world.workspace)], check=True)
    old = a_handrail_that_goes_away(world)
    for harness in ("claude-code", "gemini", "git"):
        assert run_as(world, old, "gate", "install", harness).returncode == 0
    old.unlink()
    for harness, said in (
        ("claude-code", "replaced PreToolUse: "),
        ("gemini", "replaced BeforeTool: "),
        ("git", "replaced the gate in "),
    ):
        done = run_as(world, venv_handrail(), "gate", "install", harness)
        assert done.returncode == 0, done.stderr
        assert said in done.stdout, done.stdout
        assert f"it pointed nowhere: {old} is not there" in done.stdout
    assert installed_command(world, "Stop").startswith(str(venv_handrail()) + " ")
    pre_commit = (world.workspace / ".git" / "hooks" / "pre-commit").read_text()
    assert str(old) not in pre_commit and pre_commit.count("# >>> handrail gate >>>") == 1
    assert "nothing to change" in run_as(world, venv_handrail(), "gate", "install", "git").stdout


def test_the_reference_transaction_hook_keeps_an_existing_hook_and_its_input(world: GateWorld) -> None:
    subprocess.run(["git", "init", "-q", str(world.workspace)], check=True)
    hooks = world.workspace / ".git" / "hooks"
    existing = "#!/bin/sh\necho own-saw: $1 $(cat)\n"
    (hooks / "reference-transaction").write_text(existing)
    (hooks / "reference-transaction").chmod(0o755)
    assert handrail(world, "gate", "install", "git").returncode == 0
    update = f"{'0' * 40} {'1' * 40} refs/heads/main\n"
    env = {**world.env(), "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    for state in ("prepared", "committed"):
        ran = subprocess.run(
            [str(hooks / "reference-transaction"), state],
            cwd=world.workspace,
            env=env,
            input=update,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert ran.returncode == 0, ran.stderr  # no run is active here
        assert ran.stdout == f"own-saw: {state} {update.strip()}\n"
    assert handrail(world, "gate", "uninstall", "git").returncode == 0
    assert (hooks / "reference-transaction").read_text() == existing
