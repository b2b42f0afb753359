"""The gate over HTTP: a real `handrail serve` (started by the test, stopped with it)
answering Claude Code's HTTP hooks at POST /hooks/claude-code from its own store, the
command hook asking it with `--server`, and the token rules of /mcp."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.gate.runs import GateWorld, Ran, claude_input, gate_command
from tests.helpers.http import HttpServer

ANA = "ana-token-0123456789abcdef0123456789"
BOB = "bob-token-0123456789abcdef0123456789"


def serving(world: GateWorld, people: str = f"ana {ANA}\n", env: dict[str, str] | None = None) -> HttpServer:
    """`handrail serve` on the world's store and workflows, with these people's tokens."""
    tokens = world.root / "tokens"
    tokens.write_text(people, "utf-8")
    args = ("--no-bundled", "--workflows", str(world.workflows), "--database", world.url)
    env = {"HANDRAIL_HOME": str(world.handrail_home), **(env or {})}
    return HttpServer(*args, "--tokens", str(tokens), env=env)


@pytest.fixture
def server(world: GateWorld) -> Iterator[HttpServer]:
    with serving(world, f"ana {ANA}\nbob {BOB}\n") as started:
        yield started


@pytest.fixture(scope="module")
def idle_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """One server shared by the module's tests that start no run: with no run on it, no
    answer of one test can hang on another, and a server start is a second or two."""
    idle = GateWorld(tmp_path_factory.mktemp("idle"))
    with serving(idle, f"ana {ANA}\nbob {BOB}\n") as started:
        yield started
    idle.close()


def hook(server: HttpServer, body: str | bytes, token: str | None = ANA, query: str = "") -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return server.client.post(f"{server.base}/hooks/claude-code{query}", content=body, headers=headers)


def call(server: HttpServer, tool: str, arguments: dict[str, Any], token: str = ANA) -> dict[str, Any]:
    reply = server.rpc(
        "tools/call", {"name": tool, "arguments": arguments}, headers={"Authorization": f"Bearer {token}"}
    )
    assert reply["result"]["isError"] is False, reply
    result: dict[str, Any] = reply["result"]["structuredContent"]
    return result


def remote_gate(world: GateWorld, server: HttpServer, event: str, stdin: str, *args: str) -> Ran:
    """`handrail gate EVENT --server URL`, as the harness runs it, with ana's token."""
    env = world.env() | {"HANDRAIL_TOKEN": ANA}
    done = subprocess.run(
        [*gate_command(event, *args), "--server", server.base],
        input=stdin.encode(),
        capture_output=True,
        cwd=world.workspace,
        env=env,
        timeout=60,
    )
    return Ran(done.returncode, done.stdout.decode(), done.stderr.decode())


def test_a_session_played_through_claude_codes_http_hooks_is_held_to_the_run(
    world: GateWorld, server: HttpServer
) -> None:
    run = call(
        server,
        "workflow_start",
        {"workflowId": "gate-fixture", "goal": "Add a discount", "workspace": str(world.workspace)},
    )["runId"]
    world.run_id = run

    # SessionStart takes only command hooks: the command asks the server
    started = remote_gate(
        world, server, "session-start", claude_input(world, "SessionStart", source="startup")
    )
    assert started.exit_code == 0, started.stderr
    context = started.json()["hookSpecificOutput"]["additionalContext"]
    assert f"Active handrail run {run}" in context and "Current step 1 of 4: plan" in context

    prompt = hook(server, claude_input(world, "UserPromptSubmit", prompt="go"))
    assert prompt.status_code == 200
    assert (
        prompt.json()["hookSpecificOutput"]["additionalContext"]
        == f"handrail: run {run} is at step 'plan' (1 of 4)."
    )

    # an edit during the plan step is denied; the plan file is not
    edit = {"file_path": str(world.workspace / "src" / "cart.py"), "old_string": "a", "new_string": "b"}
    denied = hook(server, claude_input(world, "PreToolUse", tool_name="Edit", tool_input=edit)).json()
    assert denied["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "step 'plan' (1 of 4" in denied["hookSpecificOutput"]["permissionDecisionReason"]
    plan = {"file_path": str(world.workspace / "docs" / "plan.md"), "content": "# Plan"}
    allowed = hook(server, claude_input(world, "PreToolUse", tool_name="Write", tool_input=plan))
    assert allowed.status_code == 200 and allowed.content == b""  # no decision: the person's rules apply

    # stopping while the step is not done is refused, naming the step
    stop = hook(server, claude_input(world, "Stop", stop_hook_active=False)).json()
    assert stop["decision"] == "block" and "step 'plan' (1 of 4)" in stop["reason"]

    # the step completed over MCP; in `implement`, a commit before the tests step is denied
    assert (
        call(server, "workflow_continue", {"runId": run, "stepId": "plan", "output": "The plan is written."})[
            "step"
        ]["id"]
        == "implement"
    )
    bash = {"command": "git add -A && git commit -m wip"}
    commit = hook(server, claude_input(world, "PreToolUse", tool_name="Bash", tool_input=bash)).json()
    assert "commit after the tests step" in commit["hookSpecificOutput"]["permissionDecisionReason"]

    # after compaction the context names the run, the step and the next call
    compacted = remote_gate(
        world, server, "session-start", claude_input(world, "SessionStart", source="compact")
    )
    context = compacted.json()["hookSpecificOutput"]["additionalContext"]
    assert run in context and "Current step 2 of 4: implement" in context
    assert f'Next call: workflow_continue with runId "{run}", stepId "implement"' in context

    for step in ("implement", "test", "release"):
        call(
            server, "workflow_continue", {"runId": run, "stepId": step, "output": f"{step}: done and shown."}
        )
    waiting = hook(server, claude_input(world, "Stop", stop_hook_active=False))
    assert waiting.status_code == 200 and waiting.content == b""  # the run waits on a person
    refused = subprocess.run(
        [*gate_command("x")[:3], "runs", "approve", run, "--database", world.url, "--as", "ana"],
        env=world.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    # the gate watches the run: the command line the agent shares needs the person's passkey
    assert refused.returncode == 1 and "passkey" in refused.stderr, refused.stderr
    world.approve_as_person(run)
    done = hook(server, claude_input(world, "Stop", stop_hook_active=False))
    assert done.status_code == 200 and done.content == b""

    decisions = [(e["event"], e["decision"]) for e in world.gate_events()]
    assert ("session", "context") in decisions and ("prompt", "context") in decisions
    assert ("before-tool", "deny") in decisions and ("stop", "block") in decisions
    assert ("after-tool", "record") not in decisions  # nothing ran that the hooks were told of


def test_a_persons_token_finds_only_that_persons_runs(world: GateWorld, server: HttpServer) -> None:
    call(
        server,
        "workflow_start",
        {"workflowId": "gate-fixture", "goal": "Add a discount", "workspace": str(world.workspace)},
    )
    stop = claude_input(world, "Stop", stop_hook_active=False)
    assert hook(server, stop, token=ANA).json()["decision"] == "block"
    bobs = hook(server, stop, token=BOB)
    assert bobs.status_code == 200 and bobs.content == b""  # bob has no run here
    assert hook(server, stop, token=None).status_code == 401
    assert hook(server, stop, token="not-a-token-of-anyone-here-0123").status_code == 401


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            b'{"hook_event_name": "Stop", "cwd": ',
            "hook input is not JSON (Expecting value at line 1 column 36)",
        ),
        (b"[1, 2]", "hook input is a JSON array, expected an object"),
        (b"", "hook input is empty"),
        (
            b'{"hook_event_name": "Notification", "cwd": "/x"}',
            "hook_event_name is 'Notification', not an event",
        ),
        (b'{"hook_event_name": "PreToolUse", "cwd": "/x"}', "PreToolUse input has no tool_name"),
        (b'{"a": "\xff"}', "hook input is not UTF-8"),
        # nested deeper than any reader goes (row 14 of issue 34: this was a 500)
        (b'{"hook_event_name": "PreToolUse", "a": ' + b"[" * 990 + b"]" * 990 + b"}", "too deep"),
        (b'{"hook_event_name": "Stop", "a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "too deep"),
        (b'{"hook_event_name": ["PreToolUse"], "cwd": 7}', "hook_event_name is missing"),
        (b'{"hook_event_name": "PreToolUse", "cwd": "/x", "tool_name": {"a": 1}}', "has no tool_name"),
        (
            b'{"hook_event_name": "ConfigChange", "cwd": "/x", "source": "project_settings"}',
            "ConfigChange is answered by the command hook, not over HTTP",
        ),
    ],
)
def test_input_the_gate_cannot_read_is_a_400_naming_the_problem(
    idle_server: HttpServer, body: bytes, said: str
) -> None:
    answered = hook(idle_server, body)
    assert answered.status_code == 400  # no run is active: Claude Code goes on, nothing to protect
    assert answered.headers["content-type"] == "application/json"
    assert said in answered.json()["error"]


def test_a_body_over_the_hook_limit_is_refused_before_it_is_read(idle_server: HttpServer) -> None:
    answered = hook(idle_server, b'{"x": "' + b"a" * (1 << 20) + b'"}')
    assert answered.status_code == 400  # no run: nothing to protect (with one, the blocking form)
    assert "hook input is larger than" in answered.json()["error"]


def test_unknown_harnesses_options_and_methods_are_named(world: GateWorld, idle_server: HttpServer) -> None:
    body = claude_input(world, "Stop", stop_hook_active=False)
    other = idle_server.client.post(
        f"{idle_server.base}/hooks/windsurf", content=body, headers={"Authorization": f"Bearer {ANA}"}
    )
    assert other.status_code == 404 and "/hooks/claude-code" in other.json()["error"]
    typo = hook(idle_server, body, query="?stop-limt=2")
    assert typo.status_code == 400 and "unknown query parameter 'stop-limt'" in typo.json()["error"]
    assert hook(idle_server, body, query="?stop-limit=9").status_code == 400
    got = idle_server.client.get(
        f"{idle_server.base}/hooks/claude-code", headers={"Authorization": f"Bearer {ANA}"}
    )
    assert got.status_code == 405


def test_the_server_answers_the_same_json_as_the_command_hook(world: GateWorld, server: HttpServer) -> None:
    """One code path: the command hook on the store and the server's HTTP hook answer alike."""
    run = call(
        server,
        "workflow_start",
        {"workflowId": "gate-fixture", "goal": "Add a discount", "workspace": str(world.workspace)},
    )["runId"]
    edit = claude_input(world, "PreToolUse", tool_name="Write", tool_input={"file_path": "src/a.py"})
    local = world.gate("pre-tool-use", edit, "--database", world.url)
    posted = hook(server, edit)
    assert posted.content.decode() == local.stdout
    assert run in local.stdout


def test_an_unreachable_server_lets_the_action_through_with_a_warning(world: GateWorld) -> None:
    stop = claude_input(world, "Stop", stop_hook_active=False)
    env = world.env()
    done = subprocess.run(
        gate_command("stop", "--server", "http://127.0.0.1:9"),
        input=stop.encode(),
        capture_output=True,
        cwd=world.workspace,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0
    assert "cannot reach http://127.0.0.1:9" in done.stderr.decode()
    assert "allowing" in json.loads(done.stdout)["systemMessage"]
    refused = subprocess.run(
        gate_command("stop", "--server", "http://127.0.0.1:9", "--on-error", "deny"),
        input=stop.encode(),
        capture_output=True,
        cwd=world.workspace,
        env=env,
        timeout=60,
    )
    assert refused.returncode == 2 and b"refusing" in refused.stderr  # every command hook's blocking error


def test_doctor_says_whether_the_servers_hooks_answer_with_the_token(
    world: GateWorld, idle_server: HttpServer
) -> None:
    def doctor(token: str, exit_code: int) -> str:
        done = subprocess.run(
            [*gate_command("doctor"), "--server", idle_server.base],
            capture_output=True,
            text=True,
            cwd=world.workspace,
            env=world.env() | {"HANDRAIL_TOKEN": token},
            timeout=60,
        )
        assert done.returncode == exit_code, done.stderr
        return done.stdout + done.stderr

    assert f"run store: the server {idle_server.base}" in doctor(ANA, 0)
    assert "test event: the server's hooks answer, and take the token" in doctor(ANA, 0)
    # a server that refuses the token is a hook that will not answer: exit 1, naming why
    assert "answered 401: Unauthorized" in doctor("nobody-has-this-token-0123456789", 1)


def test_gits_hooks_ask_the_server_too(world: GateWorld, server: HttpServer) -> None:
    run = call(
        server,
        "workflow_start",
        {"workflowId": "gate-fixture", "goal": "Add a discount", "workspace": str(world.workspace)},
    )["runId"]
    refused = remote_gate(world, server, "pre-commit", "", "--harness", "git")
    assert refused.exit_code == 1 and refused.stdout == ""
    assert f"step 'plan' (1 of 4, run {run}) does not allow shell:git commit" in refused.stderr
    refs = f"refs/heads/main {'1' * 40} refs/heads/main {'0' * 40}\nnot four fields\n"
    pushed = remote_gate(world, server, "pre-push", refs, "origin", "url", "--harness", "git")
    assert pushed.exit_code == 1 and "does not allow shell:git push origin" in pushed.stderr
    assert "pre-push input line 2 has 3 fields, expected 4; not checked" in pushed.stderr


# Cursor, Gemini CLI and Codex run command hooks only: `--server` carries them to the server
SERVER_CASES = [
    "cursor/pre-tool-use-deny-edit",
    "cursor/stop-block",
    "cursor/before-read-file-allow",
    "cursor/malformed-truncated",
    "gemini/before-tool-deny-edit",
    "gemini/after-agent-block",
    "gemini/session-start-context",
    "gemini/before-tool-allow-read",
    "codex/pre-tool-use-deny-patch-second-file",
    "codex/stop-block",
    "codex/post-tool-use-record",
    "codex/user-prompt-submit-refusal-sent-back",
]


@pytest.fixture
def local_server(world: GateWorld) -> Iterator[HttpServer]:
    """A server without tokens: its one person's runs are the ones the cases start."""
    args = ("--no-bundled", "--workflows", str(world.workflows), "--database", world.url)
    with HttpServer(*args, env={"HANDRAIL_HOME": str(world.handrail_home)}) as started:
        yield started


@pytest.mark.parametrize("name", SERVER_CASES)
def test_a_json_harness_case_asked_of_a_server_gives_the_documented_answer(
    world: GateWorld, local_server: HttpServer, name: str
) -> None:
    from tests.gate.test_gate_cases import CASES, check_case

    case = json.loads((CASES / f"{name}.json").read_text("utf-8"))
    harness = name.split("/")[0]
    check_case(world, case, "--harness", harness, "--server", local_server.base)


def test_a_codex_hook_installed_with_a_server_asks_it_with_the_persons_token(
    world: GateWorld, server: HttpServer
) -> None:
    from tests.gate.runs import as_the_harness_runs
    from tests.gate.test_gate_install import handrail

    done = handrail(world, "gate", "install", "codex", "--server", server.base)
    assert done.returncode == 0, done.stderr
    hooks = json.loads((world.workspace / ".codex" / "hooks.json").read_text())["hooks"]
    command = hooks["PreToolUse"][0]["hooks"][0]["command"]
    assert f"--harness codex --server {server.base}" in command
    run = call(
        server,
        "workflow_start",
        {"workflowId": "gate-fixture", "goal": "Add a discount", "workspace": str(world.workspace)},
    )["runId"]
    patch = "*** Begin Patch\n*** Update File: src/cart.py\n@@\n-a\n+b\n*** End Patch\n"
    stdin = json.dumps(
        {
            "session_id": "c-1",
            "cwd": str(world.workspace),
            "hook_event_name": "PreToolUse",
            "tool_name": "apply_patch",
            "tool_input": {"command": patch},
        }
    )
    asked = as_the_harness_runs(
        world, f"HANDRAIL_TOKEN={ANA} {command}", stdin, str(Path(sys.executable).parent)
    )
    assert asked.exit_code == 0, asked.stderr
    reason = json.loads(asked.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    assert f"step 'plan' (1 of 4, run {run}) does not allow edit:src/cart.py" in reason
    # bob's token finds none of ana's runs: nothing is refused for him
    as_bob = as_the_harness_runs(
        world, f"HANDRAIL_TOKEN={BOB} {command}", stdin, str(Path(sys.executable).parent)
    )
    assert (as_bob.exit_code, as_bob.stdout) == (0, "")
    # no token: the server refuses, which counts as a store that cannot be read
    anonymous = as_the_harness_runs(world, command, stdin, str(Path(sys.executable).parent))
    assert anonymous.exit_code == 0 and "answered 401" in anonymous.stderr
