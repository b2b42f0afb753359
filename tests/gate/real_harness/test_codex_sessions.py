"""Codex CLI 0.171 itself (`codex exec`), driven by a scripted Responses API on
127.0.0.1, in a git repository with the gate installed as docs/gate.md says and
handrail as its MCP server. Each session plays an agent; the assertions are on what
Codex did (the files, the commits, what it sent the model) and on the run's record."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gate.real_harness.agent_world import HANDRAIL, AgentWorld, Ran, gate_events, require, run_harness
from tests.gate.real_harness.openai_codex_home import CODEX, trust_hooks, write_config
from tests.gate.real_harness.openai_model import (
    SUMMARY,
    Filling,
    ResponsesModel,
    call,
    custom,
    is_compaction,
    outputs,
    say,
    search,
    texts,
)

pytestmark = pytest.mark.slow
GOAL = "Add a discount to the cart"


class CodexWorld(AgentWorld):
    def __init__(self, root: Path, model: ResponsesModel) -> None:
        super().__init__(root)
        self.model = model
        self.codex_home = root / "codex-home"
        self.installed = self.install_gate("codex")
        write_config(self, self.codex_home, model.url)
        self.trusted = trust_hooks(self.codex_env(), self.workspace)

    def codex_env(self) -> dict[str, str]:
        env = self.env()
        env.update(CODEX_HOME=str(self.codex_home), OPENAI_API_KEY="dummy")
        return env

    def codex(self, *args: str) -> Ran:
        argv = [str(CODEX), "exec", *args]
        ran = run_harness(argv, self.codex_env(), self.workspace)
        assert not self.model.errors, self.model.errors
        assert ran.exit_code == 0, ran.stderr[-3000:]
        return ran


@pytest.fixture
def codex_world(tmp_path: Path) -> Iterator[CodexWorld]:
    require(CODEX)
    model = ResponsesModel()
    try:
        yield CodexWorld(tmp_path, model)
    finally:
        model.close()


def patch(*lines: str) -> str:
    return "\n".join(("*** Begin Patch", *lines, "*** End Patch")) + "\n"


def session_id(ran: Ran) -> str:
    found = re.search(r"session id: (\S+)", ran.stderr + ran.stdout)
    assert found, ran.stderr
    return found.group(1)


def answered(model: ResponsesModel, item: dict[str, Any]) -> str:
    """What Codex told the model a call of `item` returned."""
    for request in model.agent_requests():
        found = outputs(request).get(item["call_id"])
        if found is not None:
            return found
    raise AssertionError(f"no request carried the output of {item['name']}")


def test_a_codex_session_is_held_to_the_run_and_let_go_when_it_is_done(codex_world: CodexWorld) -> None:
    world, model = codex_world, codex_world.model
    # the hooks name this venv's handrail, and Codex trusts them as a person's review does
    assert [hook["trustStatus"] for hook in world.trusted] == ["trusted"] * 5
    assert {hook["command"].split()[0] for hook in world.trusted} == {str(HANDRAIL)}
    workspace = str(world.workspace)

    # session 1: the agent starts a run through Codex's MCP client, then edits and
    # commits during planning, and tries to stop
    start = call(
        "workflow_start",
        {"workflowId": "gate-fixture", "goal": GOAL, "workspace": workspace},
        "mcp__handrail",
    )
    edit = custom("apply_patch", patch("*** Update File: src/cart.py", "@@", "-PRICE = 10", "+PRICE = 9"))
    commit = call("exec_command", {"cmd": "git commit --allow-empty -m plan"})
    plan = custom(
        "apply_patch", patch("*** Add File: docs/plan.md", "+# Plan", "+Take 10% off in src/cart.py.")
    )
    run: dict[str, str] = {}

    def continue_plan(request: Any) -> dict[str, Any]:
        found = re.search(r"run_[0-9a-f]{32}", answered(model, start))
        assert found
        run["id"] = found.group(0)
        return continue_(run["id"], "plan", "The plan is in docs/plan.md.")

    commit_early = call("exec_command", {"cmd": "git commit --allow-empty -m implement"})
    model.script(
        lambda r: search("handrail workflow start"),
        lambda r: start,
        lambda r: edit,
        lambda r: commit,
        lambda r: plan,
        lambda r: say("The plan is written."),
        continue_plan,
        lambda r: commit_early,
        *[lambda r: say("I will stop here.")] * 4,
    )
    first = world.codex(
        "--dangerously-bypass-approvals-and-sandbox", f"{GOAL}, with the gate-fixture workflow."
    )
    run_id = run["id"]

    # what Codex did: the edit and the commits were refused, the plan was written
    assert world.cart.read_text() == "PRICE = 10\n"
    assert (world.workspace / "docs" / "plan.md").read_text() == "# Plan\nTake 10% off in src/cart.py.\n"
    assert world.commits() == ["first"]
    assert "does not allow edit:src/cart.py" in answered(model, edit)
    assert "shell:git commit --allow-empty -m plan" in answered(model, commit)
    assert "commit after the tests step" in answered(model, commit_early)
    # each refused stop came back to the model as a prompt with the reason: 1 at plan, 3 at implement
    requests = model.agent_requests()
    reasons = re.findall(
        r"step '(\w+)' \(\d of 4\) and is not finished[^<]*refused (\d) of 3", texts(requests[-1])
    )
    assert reasons == [("plan", "1"), ("implement", "1"), ("implement", "2"), ("implement", "3")], reasons

    # session 2: resumed, Codex is told where the run stands; the agent works the run to
    # its last step, which waits for a person
    model.script(
        lambda r: custom(
            "apply_patch", patch("*** Update File: src/cart.py", "@@", "-PRICE = 10", "+PRICE = 9")
        ),
        lambda r: Filling(continue_(run_id, "implement", "PRICE is 9.")),  # Codex compacts after it
        lambda r: call("exec_command", {"cmd": "git commit -am discount"}),
        lambda r: continue_(run_id, "test", "Tests pass; committed."),
        lambda r: continue_(run_id, "release", "Release: 10% off."),
        lambda r: say("The release waits for approval."),
    )
    before = len(model.agent_requests())
    world.codex(
        "resume", "--dangerously-bypass-approvals-and-sandbox", session_id(first), "Go on with the run."
    )
    resumed = model.agent_requests()[before]
    assert f'Next call: workflow_continue with runId "{run_id}", stepId "implement"' in texts(resumed)
    assert world.cart.read_text() == "PRICE = 9\n"
    assert world.commits() == ["discount", "first"]
    # compacted, Codex starts the session again: the run's context comes back
    compacted = [i for i, r in enumerate(model.requests) if is_compaction(r)]
    assert len(compacted) == 1, "Codex did not compact"
    after = model.requests[compacted[0] + 1]
    assert SUMMARY in texts(after)
    assert f'Next call: workflow_continue with runId "{run_id}", stepId "test"' in texts(after)
    assert world.record(run_id)["run"]["status"] == "awaiting_approval"

    # session 3: approved, the run is done: edits, commits and the stop go through
    world.approve(run_id)
    model.script(
        lambda r: custom(
            "apply_patch", patch("*** Update File: src/cart.py", "@@", "-PRICE = 9", "+PRICE = 8")
        ),
        lambda r: call("exec_command", {"cmd": "git commit -am more"}),
        lambda r: say("Done."),
    )
    world.codex(
        "resume", "--dangerously-bypass-approvals-and-sandbox", session_id(first), "One more discount."
    )
    assert world.cart.read_text() == "PRICE = 8\n"
    assert world.commits() == ["more", "discount", "first"]

    record = world.record(run_id)
    assert record["run"]["status"] == "completed"
    decisions = [(e["event"], e.get("action"), e["decision"]) for e in gate_events(record)]
    assert ("before-tool", "edit:src/cart.py", "deny") in decisions
    assert ("before-tool", "shell:git commit --allow-empty -m plan", "deny") in decisions
    assert ("after-tool", "shell:git commit -am discount", "record") in decisions
    # 4 refused, then let go after 3 in a row, then allowed while the release waits for a person
    stopped = [d[2] for d in decisions if d[0] == "stop"]
    assert stopped == ["block", "block", "block", "block", "allow:limit", "allow"]
    assert ("session", None, "context") in decisions


def continue_(run_id: str, step: str, output: str) -> dict[str, Any]:
    arguments = {"runId": run_id, "stepId": step, "output": output}
    return call("workflow_continue", arguments, "mcp__handrail")
