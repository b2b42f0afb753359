"""Codex, headless: `codex exec --json PROMPT`, with this handrail as its MCP server
and the gate's hooks given through `-c` overrides of its configuration, so the user's
CODEX_HOME (its config.toml, its login) is read as it is and never written. Its JSON
events say what the process spent: each `turn.completed` carries that turn's token
counts; Codex reports no price.

Codex runs a hook only once a person has trusted it in `/hooks`, a trust kept in the
user's config.toml, which the driver must not write. The hooks given here are the
driver's own, for this invocation only, so `--dangerously-bypass-hook-trust` lets
them run without that trust: it trusts every hook Codex finds for the session, the
user's own included. So a workspace that carries Codex hooks of its own (a
repository's `.codex/hooks.json`, or a `[hooks]` table in its `.codex/config.toml`,
from the workspace up to its git root) is refused before each process starts: the
repository is not trusted, and its hooks would run unreviewed."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from handrail.drive.gemini import bound  # Codex's hooks have Gemini CLI's shape: groups per event
from handrail.drive.usage import Usage, count
from handrail.model.errors import HandrailError

NAME = "codex"
PROGRAM = "codex"


def _toml(text: str) -> str:
    return json.dumps(text)  # a JSON string is a TOML basic string


def _toml_value(value: Any) -> str:
    """A hook's settings as a TOML value: inline tables, arrays, strings, numbers."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml(str(k))} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return _toml(str(value))


def command(
    program: str,
    prompt: str,
    server: Sequence[str],
    server_env: Mapping[str, str],
    hooks: Mapping[str, Any] | None = None,
    driven_from: int = 0,
    resume: str | None = None,
    name: str = "handrail",
    driven_run: str = "",
) -> list[str]:
    """`hooks`: the gate's, each event a list of groups (cli/drive.py), bound to the step
    the session is started for with `--driven-from` as Claude Code's are. `resume`
    (--session per-run): the thread to go on with, `codex exec resume ID`."""
    args = ", ".join(_toml(a) for a in server[1:])
    overrides = [
        f"mcp_servers.{name}.command={_toml(server[0])}",
        f"mcp_servers.{name}.args=[{args}]",
    ]
    if server_env:  # Codex starts an MCP server with a few of its own variables only
        pairs = ", ".join(f"{key} = {_toml(value)}" for key, value in sorted(server_env.items()))
        overrides.append(f"mcp_servers.{name}.env={{ {pairs} }}")
    for event, groups in bound(hooks or {}, driven_from, driven_run).items():
        overrides.append(f"hooks.{event}={_toml_value(groups)}")
    argv = [program, "exec", *(["resume"] if resume else []), "--json", "--skip-git-repo-check"]
    # a headless process cannot answer Codex's own approval prompts
    argv.append("--dangerously-bypass-approvals-and-sandbox")
    if hooks:
        argv.append("--dangerously-bypass-hook-trust")  # the hooks are the driver's own (above)
    for override in overrides:
        argv += ["-c", override]
    return [*argv, "--", *([resume] if resume else []), prompt]


def start(
    program: str,
    prompt: str,
    server: Sequence[str],
    server_env: Mapping[str, str],
    hooks: Mapping[str, Any],
    driven_from: int,
    workspace: str,
    resume: str | None = None,
    driven_run: str = "",
) -> tuple[list[str], dict[str, str]]:
    """The command line, once the workspace is seen to carry no hooks of its own."""
    if hooks:
        found = own_hooks(Path(workspace))
        if found:
            raise HandrailError(
                f"the workspace carries Codex hooks of its own ({', '.join(map(str, found))}): "
                "handrail drive gives Codex the gate's hooks with --dangerously-bypass-hook-trust, "
                "which would run them unreviewed; remove them, or drive with another --agent"
            )
    return command(program, prompt, server, server_env, hooks, driven_from, resume, driven_run=driven_run), {}


def own_hooks(workspace: Path) -> list[Path]:
    """The Codex hook files of the workspace and each folder above it, up to its git
    root: a `hooks.json`, or a `config.toml` with a `hooks` table (or one that cannot be
    read, which may have one)."""
    found: list[Path] = []
    for folder in (workspace, *workspace.parents):
        listed = folder / ".codex" / "hooks.json"
        if listed.exists():
            found.append(listed)
        config = folder / ".codex" / "config.toml"
        if config.exists():
            try:
                table = tomllib.loads(config.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                table = {"hooks": None}
            if "hooks" in table:
                found.append(config)
        if (folder / ".git").exists():
            break
    return found


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
