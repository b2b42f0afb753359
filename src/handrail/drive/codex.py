"""Codex, headless: `codex exec --json PROMPT`, with this handrail as its MCP server
given through `-c` overrides of its configuration, so the user's CODEX_HOME (its
config.toml, its login) is read as it is and never written. Its JSON events say what
the process spent: each `turn.completed` carries that turn's token counts; Codex
reports no price.

The gate's hooks are not given: Codex runs a hook only once a person has trusted it in
`/hooks` (the trust is kept in the user's config.toml), and writing that trust for
them is what a driver must not do. The driver still reads the run after each process,
so a step is done only when the agent's own `workflow_continue` was accepted."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from handrail.drive.usage import Usage, count

NAME = "codex"
PROGRAM = "codex"


def _toml(text: str) -> str:
    return json.dumps(text)  # a JSON string is a TOML basic string


def command(
    program: str,
    prompt: str,
    server: Sequence[str],
    server_env: Mapping[str, str],
    name: str = "handrail",
) -> list[str]:
    args = ", ".join(_toml(a) for a in server[1:])
    overrides = [
        f"mcp_servers.{name}.command={_toml(server[0])}",
        f"mcp_servers.{name}.args=[{args}]",
    ]
    if server_env:  # Codex starts an MCP server with a few of its own variables only
        pairs = ", ".join(f"{key} = {_toml(value)}" for key, value in sorted(server_env.items()))
        overrides.append(f"mcp_servers.{name}.env={{ {pairs} }}")
    argv = [program, "exec", "--json", "--skip-git-repo-check"]
    # a headless process cannot answer Codex's own approval prompts
    argv.append("--dangerously-bypass-approvals-and-sandbox")
    for override in overrides:
        argv += ["-c", override]
    return [*argv, "--", prompt]


def usage(stdout: str) -> Usage:
    """The sum of the turns' token counts, the thread's id as the session; unreported
    when no turn completed (killed, or it never reached the model)."""
    found = {"input": 0, "cached": 0, "output": 0, "turns": 0}
    session: str | None = None
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if event.get("type") == "thread.started" and isinstance(event.get("thread_id"), str):
            session = event["thread_id"]
        if event.get("type") == "turn.completed":
            tokens = event.get("usage") if isinstance(event.get("usage"), dict) else {}
            assert isinstance(tokens, dict)
            found["input"] += count(tokens.get("input_tokens"))
            found["cached"] += count(tokens.get("cached_input_tokens"))
            found["output"] += count(tokens.get("output_tokens"))
            found["turns"] += 1
    if not found["turns"]:
        return Usage(session=session)
    return Usage(
        # OpenAI counts the cached part inside the input: the input here is what was not cached
        input_tokens=max(found["input"] - found["cached"], 0),
        output_tokens=found["output"],
        cache_read_tokens=found["cached"],
        turns=found["turns"],
        session=session,
        reported=True,
    )
