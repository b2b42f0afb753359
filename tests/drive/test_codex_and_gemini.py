"""How `handrail drive` starts Codex and Gemini CLI and reads what they spent."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from handrail.drive import codex, gemini
from handrail.drive.usage import Usage
from handrail.model.errors import HandrailError

SERVER = ["/v/bin/handrail", "start", "--database", "sqlite:///x"]
STOP = {
    "AfterAgent": [{"hooks": [{"type": "command", "command": "/v/bin/handrail gate stop --harness gemini"}]}]
}


def test_codex_gets_the_mcp_server_as_config_overrides_and_the_prompt_after_them() -> None:
    argv = codex.command("codex", "-Do the step.", SERVER, {"HANDRAIL_HOME": "/h"})
    overrides = [argv[i + 1] for i, word in enumerate(argv) if word == "-c"]
    assert overrides == [
        'mcp_servers.handrail.command="/v/bin/handrail"',
        'mcp_servers.handrail.args=["start", "--database", "sqlite:///x"]',
        'mcp_servers.handrail.env={ HANDRAIL_HOME = "/h" }',
    ]
    assert argv[:3] == ["codex", "exec", "--json"] and argv[-2:] == ["--", "-Do the step."]


def test_codex_gets_the_gates_hooks_bound_to_the_step_as_toml_overrides_trusted_for_this_run_only() -> None:
    hooks = {
        "Stop": [
            {
                "hooks": [
                    {"type": "command", "command": "/v/handrail gate stop --harness codex", "timeout": 30}
                ]
            }
        ]
    }
    argv = codex.command("codex", "Do it.", SERVER, {}, hooks, 2)
    overrides = [argv[at + 1] for at, word in enumerate(argv) if word == "-c"]
    (given,) = [o for o in overrides if o.startswith("hooks.")]
    key, _, value = given.partition("=")
    assert key == "hooks.Stop"
    command = "/v/handrail gate stop --harness codex --driven-from 2 --stop-limit 1"
    assert tomllib.loads(f"v = {value}")["v"] == [
        {"hooks": [{"type": "command", "command": command, "timeout": 30}]}
    ]
    assert "--dangerously-bypass-hook-trust" in argv[: argv.index("-c")]
    assert "--dangerously-bypass-hook-trust" not in codex.command("codex", "Do it.", SERVER, {})


def test_codex_usage_is_the_sum_of_its_completed_turns() -> None:
    events = [
        {"type": "thread.started", "thread_id": "t-1"},
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 100, "cached_input_tokens": 40, "output_tokens": 9},
        },
        {"type": "turn.completed", "usage": {"input_tokens": 50, "output_tokens": "x"}},
    ]
    stdout = "\n".join(["not json", *map(json.dumps, events)])
    assert codex.usage(stdout) == Usage(110, 9, 40, 0, 0.0, 2, "t-1", True)  # 150 in, 40 of it cached
    assert codex.usage(json.dumps(events[0])) == Usage(session="t-1")


def test_gemini_gets_a_home_of_its_own_layered_over_the_users_which_is_never_written(tmp_path: Path) -> None:
    users = tmp_path / "home" / ".gemini"
    users.mkdir(parents=True)
    (users / "settings.json").write_text(json.dumps({"model": {"name": "m"}, "mcpServers": {"other": {}}}))
    (users / "oauth_creds.json").write_text("{}")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    argv, env = gemini.start("gemini", "Do it.", SERVER, STOP, 3, scratch, {"HOME": str(tmp_path / "home")})

    assert argv == ["gemini", "-p", "Do it.", "--output-format", "json", "--yolo"]
    home = Path(env["GEMINI_CLI_HOME"]) / ".gemini"
    settings = json.loads((home / "settings.json").read_text())
    assert settings["model"] == {"name": "m"} and set(settings["mcpServers"]) == {"other", "handrail"}
    assert settings["mcpServers"]["handrail"] == {"command": SERVER[0], "args": SERVER[1:]}
    stop = settings["hooks"]["AfterAgent"][0]["hooks"][0]["command"]
    assert stop.endswith("--harness gemini --driven-from 3 --stop-limit 1")
    assert (home / "oauth_creds.json").resolve() == (users / "oauth_creds.json").resolve()
    assert json.loads((users / "settings.json").read_text()) == {
        "model": {"name": "m"},
        "mcpServers": {"other": {}},
    }


def test_gemini_settings_that_are_not_plain_json_are_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text("{ // a comment\n}")
    with pytest.raises(HandrailError, match=r"settings\.json are not plain JSON"):
        gemini.start("gemini", "Do it.", SERVER, STOP, 0, tmp_path, {"HOME": str(tmp_path)})


def test_gemini_usage_is_read_from_the_stats_of_its_json_result() -> None:
    result = {
        "response": "done",
        "session_id": "s-2",
        "stats": {
            "models": {
                "gemini-2.5-flash": {
                    "api": {"totalRequests": 2},
                    "tokens": {"prompt": 300, "candidates": 20, "cached": 100},
                }
            }
        },
    }
    assert gemini.usage("Loaded cached credentials.\n" + json.dumps(result, indent=2)) == Usage(
        200, 20, 100, 0, 0.0, 2, "s-2", True
    )
    assert gemini.usage("") == Usage() and not gemini.usage("killed").reported


def test_codex_is_not_started_in_a_workspace_that_carries_hooks_of_its_own(tmp_path: Path) -> None:
    hooks = {"Stop": [{"hooks": [{"type": "command", "command": "handrail gate stop --harness codex"}]}]}
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    work = repo / "pkg"
    (work / ".codex").mkdir(parents=True)
    (work / ".codex" / "config.toml").write_text('model = "m"\n')  # no hooks: fine
    assert codex.start("codex", "Do it.", SERVER, {}, hooks, 0, str(work))[0][0] == "codex"
    (repo / ".codex").mkdir()
    (repo / ".codex" / "hooks.json").write_text("{}")  # the repository's own, at its root
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "hooks.json").write_text("{}")  # above the git root: not Codex's project
    with pytest.raises(HandrailError, match=r"hooks of its own \(.*repo/\.codex/hooks\.json\)"):
        codex.start("codex", "Do it.", SERVER, {}, hooks, 0, str(work))
    (repo / ".codex" / "hooks.json").unlink()
    (work / ".codex" / "config.toml").write_text("[hooks]\nStop = []\n")
    assert codex.own_hooks(work) == [work / ".codex" / "config.toml"]
    (work / ".codex" / "config.toml").write_text("not = [toml")  # unreadable: it may hold hooks
    assert codex.own_hooks(work) == [work / ".codex" / "config.toml"]


def test_codex_goes_on_with_a_thread_through_exec_resume() -> None:
    argv = codex.command("codex", "Next step.", SERVER, {}, resume="thread-1")
    assert argv[:4] == ["codex", "exec", "resume", "--json"] and argv[-3:] == ["--", "thread-1", "Next step."]
