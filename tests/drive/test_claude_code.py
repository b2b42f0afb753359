"""How `handrail drive` starts Claude Code and reads what it spent."""

from __future__ import annotations

import json

from handrail.drive.claude_code import Usage, bound, command, usage

HOOKS = {
    "Stop": {"hooks": [{"type": "command", "command": "/v/bin/handrail gate stop --harness claude-code"}]},
    "PreToolUse": {
        "matcher": "*",
        "hooks": [{"type": "http", "url": "http://127.0.0.1:1/hooks/claude-code"}],
    },
}


def test_the_hooks_are_claude_codes_matcher_group_lists_each_command_bound_to_the_step() -> None:
    given = bound(HOOKS, 2)
    stop = "/v/bin/handrail gate stop --harness claude-code --driven-from 2 --stop-limit 1"
    assert given["Stop"] == [{"hooks": [{"type": "command", "command": stop}]}]
    assert given["PreToolUse"] == [HOOKS["PreToolUse"]]  # an HTTP hook has no command line


def test_the_settings_and_the_mcp_server_go_on_the_command_line_never_into_a_file() -> None:
    argv = command(
        "claude", "Do the step.", HOOKS, ["/v/bin/handrail", "start", "--database", "sqlite:///x"], 0
    )
    assert argv[:5] == ["claude", "-p", "Do the step.", "--output-format", "json"]
    settings = json.loads(argv[argv.index("--settings") + 1])
    assert settings["hooks"]["Stop"][0]["hooks"][0]["command"].endswith("--driven-from 0 --stop-limit 1")
    server = json.loads(argv[argv.index("--mcp-config") + 1])["mcpServers"]["handrail"]
    assert server == {"command": "/v/bin/handrail", "args": ["start", "--database", "sqlite:///x"]}


def test_the_usage_is_read_from_the_json_result() -> None:
    result = {
        "type": "result",
        "session_id": "s-1",
        "num_turns": 3,
        "total_cost_usd": 0.0125,
        "usage": {
            "input_tokens": 120,
            "output_tokens": 30,
            "cache_read_input_tokens": 7,
            "cache_creation_input_tokens": 5,
        },
    }
    assert usage("warming up\n" + json.dumps(result) + "\n") == Usage(120, 30, 7, 5, 0.0125, 3, "s-1", True)


def test_no_result_is_an_unreported_usage_and_bad_counts_are_zero() -> None:
    assert usage("") == Usage() and not usage("killed").reported
    odd = {"type": "result", "total_cost_usd": -1, "usage": {"input_tokens": "many", "output_tokens": -3}}
    assert usage(json.dumps(odd)) == Usage(reported=True)
