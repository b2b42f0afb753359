"""A stand-in agent that speaks MCP, for `handrail drive --agent-command`: it reads the
command line the driver gives Claude Code (`-p PROMPT`, `--mcp-config JSON`), starts
the MCP server named there and does what the prompt asks with no model: at a parallel
loop it claims a branch, writes its item into the branch's folder and submits the
branch's steps with the lease; at a step it submits the step. Each line of what it did
goes to $DRIVE_AGENT_LOG. With $DRIVE_AGENT_DIES set, the first agent to claim a branch
exits without working it (its branch then waits for its lease to end)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

RESULT = {
    "type": "result",
    "total_cost_usd": 0.01,
    "num_turns": 1,
    "usage": {"input_tokens": 10, "output_tokens": 2},
}


class Server:
    def __init__(self, command: str, args: list[str]) -> None:
        self.process = subprocess.Popen(
            [command, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.next = 0
        client = {"name": "mcp-agent", "version": "1"}
        self.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def ask(self, method: str, params: dict[str, Any]) -> Any:
        self.next += 1
        self.send({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
        assert self.process.stdout is not None
        for line in self.process.stdout:
            message = json.loads(line)
            if message.get("id") == self.next:
                return message.get("result", message.get("error"))
        raise SystemExit("the MCP server ended")

    def tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self.ask("tools/call", {"name": name, "arguments": arguments})
        found = result.get("structuredContent") or json.loads(result["content"][0]["text"])
        return dict(found)


def log(line: str) -> None:
    with open(os.environ["DRIVE_AGENT_LOG"], "a", encoding="utf-8") as out:
        out.write(line + "\n")


def branch(server: Server, parent: str, prompt: str) -> None:
    claim = server.tool("workflow_claim", {"runId": parent})
    if not claim.get("claimed"):
        log("claimed nothing")
        return
    index, item, run_id = claim["branch"], claim.get("item"), claim["runId"]
    dies = Path(os.environ.get("DRIVE_AGENT_DIES", "/nonexistent"))
    if os.environ.get("DRIVE_AGENT_DIES") and not dies.exists():
        dies.write_text(str(index))
        log(f"died holding branch {index}")
        os._exit(1)
    found = re.search(rf"^- branch {index}\b.*: (\S+)$", prompt, re.MULTILINE)
    assert found, prompt
    Path(found.group(1), "item.txt").write_text(str(item))
    step, lease = claim["step"], claim["lease"]["token"]
    while step is not None:
        answer = server.tool(
            "workflow_continue",
            {"runId": run_id, "stepId": step["id"], "output": f"Did {item}.", "lease": lease},
        )
        step = None if answer.get("isComplete") else answer.get("step")
    log(f"did branch {index} in {found.group(1)}")


def main() -> None:
    argv = sys.argv[1:]
    prompt = argv[argv.index("-p") + 1]
    mcp = json.loads(argv[argv.index("--mcp-config") + 1])["mcpServers"]["handrail"]
    server = Server(mcp["command"], mcp["args"])
    claim = re.search(r'workflow_claim tool with runId "(run_\w+)"', prompt)
    if claim:
        branch(server, claim.group(1), prompt)
    else:
        named = re.search(r'runId "(run_\w+)", stepId "([\w-]+)"', prompt)
        assert named, prompt
        log("step " + named.group(2) + ": " + json.dumps(prompt))
        server.tool(
            "workflow_continue", {"runId": named.group(1), "stepId": named.group(2), "output": "Gathered."}
        )
    print(json.dumps(RESULT))


if __name__ == "__main__":
    main()
