"""What a tool call changed, undone and told to the agent in each harness's own
blocking form after the call: Gemini CLI's AfterTool `decision: deny`, Codex's
PostToolUse `decision: block` (Claude Code's: tests/gate/test_shortcuts.py)."""

from __future__ import annotations

import subprocess

from tests.gate.runs import GateWorld
from tests.gate.shortcuts import CART, IDENTITY
from tests.gate.test_gate_session_harnesses import Harness, install


def shop(world: GateWorld) -> None:
    (world.workspace / "src").mkdir()
    (world.workspace / "src" / "cart.py").write_text(CART)
    env = {**world.env(), **IDENTITY}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "shop"]):
        subprocess.run(["git", *args], cwd=world.workspace, env=env, check=True, capture_output=True)
    world.start("plan")


def ls_into_the_cart(world: GateWorld) -> None:
    subprocess.run(["bash", "-c", "ls > src/cart.py"], cwd=world.workspace, env=world.env(), check=True)


def test_gemini_cli_is_told_in_after_tool_what_the_gate_undid(world: GateWorld) -> None:
    shop(world)
    install(world, "gemini")
    gemini = Harness(world, ".gemini/settings.json", session_id="g-1", timestamp="2026-05-02T10:00:00Z")
    call = {"tool_name": "run_shell_command", "tool_input": {"command": "ls > src/cart.py"}}
    assert gemini("BeforeAgent", prompt="go") is not None
    assert gemini("BeforeTool", **call) == {}
    ls_into_the_cart(world)
    after = gemini("AfterTool", **call, tool_response={"llmContent": ""})
    assert after["decision"] == "deny" and "src/cart.py (modified: put back)" in after["reason"]
    assert (world.workspace / "src" / "cart.py").read_text() == CART
    assert [e["type"] for e in world.events()].count("violation") == 1


def test_codex_is_told_in_post_tool_use_what_the_gate_undid(world: GateWorld) -> None:
    shop(world)
    install(world, "codex")
    codex = Harness(world, ".codex/hooks.json", session_id="019a-c0de", model="gpt-5-codex", turn_id="t-1")
    call = {"tool_name": "Bash", "tool_input": {"command": "ls > src/cart.py"}}
    codex("UserPromptSubmit", prompt="go")
    assert codex("PreToolUse", **call) == {}
    ls_into_the_cart(world)
    after = codex("PostToolUse", **call, tool_response="")
    assert after["decision"] == "block" and "src/cart.py (modified: put back)" in after["reason"]
    assert (world.workspace / "src" / "cart.py").read_text() == CART
    assert [e["type"] for e in world.events()].count("violation") == 1
