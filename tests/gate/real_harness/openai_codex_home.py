"""A temporary CODEX_HOME for Codex CLI 0.171 sessions against the scripted Responses
API: its config.toml names the scripted provider, handrail as the MCP server and the
workspace as a trusted project, and the gate's hooks are trusted the way a person's
`/hooks` review trusts them.

Codex keeps a person's hook trust in config.toml, one `hooks.state."<key>"` table per
hook with the `trusted_hash` of the hook as reviewed. The keys and hashes are read
from Codex itself (`codex app-server`, its `hooks/list` method) and written with its
own `config/batchWrite`, as the TUI's review does; `hooks/list` must then call each
of handrail's hooks trusted.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.gate.real_harness.agent_world import HANDRAIL, HARNESSES, AgentWorld
from tests.gate.real_harness.openai_model import COMPACT_PROMPT

CODEX = HARNESSES / "codex"
MODEL = "gpt-5.5"  # a model Codex knows: its apply_patch tool, and MCP tools found through tool_search


def toml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a TOML basic string for these paths and URLs


def write_config(world: AgentWorld, codex_home: Path, model_url: str) -> None:
    args = ", ".join(toml_string(a) for a in world.server_args())
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f"""model = "{MODEL}"
model_provider = "scripted"
check_for_update_on_startup = false
compact_prompt = {toml_string(COMPACT_PROMPT)}
model_auto_compact_token_limit = 100000

[model_providers.scripted]
name = "scripted"
base_url = {toml_string(model_url + "/v1")}
env_key = "OPENAI_API_KEY"
wire_api = "responses"
# a loaded machine answers slowly: wait long rather than retry a request the script answered
stream_idle_timeout_ms = 600000

[mcp_servers.handrail]
command = {toml_string(str(HANDRAIL))}
args = [{args}]
env = {{ HANDRAIL_HOME = {toml_string(str(world.handrail_home))} }}

[projects.{toml_string(str(world.workspace))}]
trust_level = "trusted"
""",
        encoding="utf-8",
    )


class AppServer:
    """`codex app-server` over stdio: one JSON-RPC request at a time."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            [str(CODEX), "app-server"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.next_id = 0
        self.request("initialize", {"clientInfo": {"name": "handrail-tests", "version": "1"}})
        self._send({"jsonrpc": "2.0", "method": "initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.process.stdout is not None
        for line in self.process.stdout:  # notifications come between: skipped
            message = json.loads(line)
            if message.get("id") == self.next_id:
                assert "error" not in message, message
                return message["result"]
        raise AssertionError(f"codex app-server ended before answering {method}")

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def handrail_hooks(app: AppServer, workspace: Path) -> list[dict[str, Any]]:
    listed = app.request("hooks/list", {"cwds": [str(workspace)]})
    return [
        hook
        for entry in listed["data"]
        for hook in entry["hooks"]
        if str(hook.get("command", "")).split()[0].endswith("handrail")
    ]


def trust_hooks(env: dict[str, str], workspace: Path) -> list[dict[str, Any]]:
    """Trust handrail's hooks as a person's review does; the hooks as Codex then lists them."""
    app = AppServer(env, workspace)
    try:
        hooks = handrail_hooks(app, workspace)
        state = {hook["key"]: {"trusted_hash": hook["currentHash"]} for hook in hooks}
        app.request(
            "config/batchWrite",
            {"edits": [{"keyPath": "hooks.state", "value": state, "mergeStrategy": "upsert"}]},
        )
        return handrail_hooks(app, workspace)
    finally:
        app.close()
