"""Claude Code itself, held to a run of the bundled `coding-task` by the gate installed as
the README says (`handrail gate install claude-code --scope project`, `gate install git`),
with handrail as its MCP server and a scripted model playing the agent.

Each test asserts on what the harness did (the file on disk, the commit log, the requests
it sent the model) and on the run's record (`handrail runs show --format json`)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gate.real_harness.anthropic_model import Request, ScriptedModel, Turn, say, use
from tests.gate.real_harness.claude_code_world import (
    CLAUDE,
    HANDRAIL,
    PLUGIN,
    ROOT,
    SOURCE,
    SYSTEM_PATH,
    VERSION,
    Conversation,
    World,
    require_claude,
)
from tests.gate.real_harness.coding_task_agent import DISCOUNTED, IMPLEMENTED, VERIFIED, Run, stops

pytestmark = pytest.mark.slow

REFUSED = "hook error: handrail: step 'understand' (1 of 5"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    require_claude()
    model = ScriptedModel()
    try:
        found = World(tmp_path, model)
        found.install_gate()
        yield found
    finally:
        model.close()


def results(requests: list[Request]) -> list[str]:
    """The text of each tool result the model was given, in order, once each."""
    seen: dict[str, str] = {}
    for request in requests:
        for message in request.messages:
            for block in message.get("content") or ():
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    content = block.get("content")
                    text = content if isinstance(content, str) else json.dumps(content)
                    seen.setdefault(str(block.get("tool_use_id")), text)
    return list(seen.values())


def decisions(world: World, run_id: str) -> list[tuple[str, str, str]]:
    """The gate's decisions in the run's record: (event, decision, action or '')."""
    return [
        (str(e["event"]), str(e["decision"]), str(e.get("action") or "")) for e in world.gate_events(run_id)
    ]


def test_an_edit_and_a_commit_during_planning_are_refused_by_the_installed_hooks(world: World) -> None:
    run = Run(str(world.repo))
    cart = str(world.repo / "src" / "cart.py")
    script = world.root / "commit.sh"
    script.write_text("git commit -q --allow-empty -m 'cart: from a script'\n")
    world.model.play(
        run.start(),
        run.then(use("Read", file_path=cart)),
        use("Edit", file_path=cart, old_string="sum(prices)", new_string="sum(prices) * 0.9"),
        use("Write", file_path=cart, content=DISCOUNTED),
        use("Bash", command="git commit -am 'cart: a discount'"),
        # a commit the gate cannot read in the command line (inside a script): git's own hook refuses it
        use("Bash", command=f"sh {script}"),
        say("I will wait for the plan."),
        *stops(3),
    )
    # the harness's PATH has no venv: the hooks name the venv's handrail, and doctor finds them answering
    assert str(HANDRAIL.parent) not in world.harness_env()["PATH"].split(os.pathsep)
    doctor = world.handrail("gate", "doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    session = world.claude("Give the cart's total a discount")

    assert session.exit_code == 0, session.stderr
    pinned = json.loads((ROOT / "tests" / "harnesses" / "package.json").read_text())["dependencies"]
    init = next(m for m in session.messages if m.get("subtype") == "init")
    assert init["claude_code_version"] == VERSION == pinned["@anthropic-ai/claude-code"]
    assert (world.repo / "src" / "cart.py").read_text() == SOURCE
    assert world.log() == ["cart: a total"]
    told = results(world.model.played)
    # the read went through; the edit, the write and the commit were refused by the gate's hook
    assert "sum(prices)" in told[1]
    assert REFUSED in told[2] and "does not allow edit:src/cart.py" in told[2]
    assert REFUSED in told[3] and "does not allow edit:src/cart.py" in told[3]
    assert REFUSED in told[4] and "shell:git commit -am 'cart: a discount'" in told[4]
    assert told[5].startswith("Exit code 1") and "does not allow shell:git commit (" in told[5], told[5]
    assert world.model.left == 0 and world.model.unscripted == 0
    assert run.id is not None
    # git's pre-commit hook (from `gate install git`) records its refusal in the run as well
    refused = [action for _, decision, action in decisions(world, run.id) if decision == "deny"]
    assert refused == [
        "edit:src/cart.py",
        "edit:src/cart.py",
        "shell:git commit -am 'cart: a discount'",
        "shell:git commit",
    ]


def test_handrails_instructions_reach_the_model_whole(world: World) -> None:
    world.model.play(say("Hello."))
    session = world.claude("What can you do here?")

    assert session.exit_code == 0, session.stderr
    sent = world.model.played[0]
    told = "\n".join(
        str(part.get("text", "")) if isinstance(part, dict) else ""
        for message in sent.messages
        for part in (
            message["content"] if isinstance(message["content"], list) else [{"text": message["content"]}]
        )
    )
    # whole, however long: 2.1.332 keeps all of handrail's 2,733 characters (issue 35 reported a cut at 2,048)
    assert f"## handrail\n{world.instructions()}" in told


def test_stopping_while_the_run_is_active_is_refused_three_times_then_let_through(world: World) -> None:
    run = Run(str(world.repo))
    world.model.play(run.start(), run.then(say("Done, I think.")), *stops(3))
    session = world.claude("Give the cart's total a discount")

    assert session.exit_code == 0, session.stderr
    assert session.result["subtype"] == "success"
    # each refusal came back to the model as the next request, naming the step and the call
    follow_ups = [r.last_user_text() for r in world.model.played[2:]]
    assert len(follow_ups) == 3 and world.model.unscripted == 0
    for count, text in enumerate(follow_ups, 1):
        assert "Stop hook feedback" in text, text
        assert f"run {run.id} (coding-task) is at step 'understand' (1 of 5) and is not finished" in text
        assert "workflow_continue" in text and f"stopping is refused {count} of 3 times" in text
    assert run.id is not None
    stopped = [d[1] for d in decisions(world, run.id) if d[0] == "stop"]
    assert stopped[:3] == ["block", "block", "block"] and "block" not in stopped[3:]


def test_a_subagent_started_with_the_agent_tool_is_held_to_the_same_step(world: World) -> None:
    run = Run(str(world.repo))
    cart = str(world.repo / "src" / "cart.py")
    helper = "Apply a 10% discount in src/cart.py, then commit it."
    world.model.play(
        run.start(),
        run.then(
            use(
                "Agent",
                description="Discount",
                prompt=helper,
                subagent_type="general-purpose",
                run_in_background=False,
            )
        ),
        # the subagent's turns
        use("Write", file_path=cart, content=DISCOUNTED),
        use("Bash", command="git commit -am 'cart: a discount'"),
        say("Applied the discount."),
        *stops(3),
        # the agent's, once its helper reported: its own stops are counted apart from the helper's
        say("My helper is done."),
        *stops(3),
    )
    session = world.claude("Give the cart's total a discount")

    assert session.exit_code == 0, session.stderr
    assert (world.repo / "src" / "cart.py").read_text() == SOURCE
    assert world.log() == ["cart: a total"]
    played = world.model.played
    helper_requests = [r for r in played if "cc_is_subagent=true" in json.dumps(r.body.get("system"))]
    assert helper_requests and helper in helper_requests[0].last_user_text()
    told = results(helper_requests)
    assert REFUSED in told[0] and "does not allow edit:src/cart.py" in told[0]
    assert REFUSED in told[1] and "shell:git commit -am 'cart: a discount'" in told[1]
    # its stops were judged too: refused while the step is not done
    refusals = [
        r for r in helper_requests if "SubagentStop hook blocking error" in json.dumps(r.messages[-1])
    ]
    counts = [
        f"stopping is refused {n} of 3 times" in json.dumps(r.messages[-1]) for n, r in enumerate(refusals, 1)
    ]
    assert counts == [True, True, True]
    assert run.id is not None
    denied = [d[2].split(":")[0] for d in decisions(world, run.id) if d[1] == "deny"]
    assert denied == ["edit", "shell"]
    own = [e["decision"] for e in world.gate_events(run.id) if e["event"] == "stop" and not e.get("agent")]
    assert own == ["block", "block", "block", "allow:limit"]
    helpers = [e["decision"] for e in world.gate_events(run.id) if e["event"] == "stop" and e.get("agent")]
    assert helpers == ["block", "block", "block", "allow:limit"]


def test_after_compact_the_session_start_hook_brings_the_run_back_to_the_model(world: World) -> None:
    run = Run(str(world.repo))
    summary = "<analysis>The user asked for a discount.</analysis>\n<summary>A run was started.</summary>"
    world.model.play(
        run.start(), run.then(say("Started.")), *stops(3), say(summary), say("Back at it."), *stops(3)
    )
    conversation = Conversation(world)
    try:
        conversation.tell("Give the cart's total a discount")
        before = len(world.model.played)
        compacted = conversation.tell("/compact")
        assert any(m.get("subtype") == "compact_boundary" for m in compacted), compacted
        conversation.tell("Where were we?")
    finally:
        conversation.close()

    asked = world.model.played[before:]
    assert "<summary>" in asked[0].last_user_text() or "summary" in asked[0].text  # the compaction itself
    after = next(r for r in asked if "Where were we?" in r.last_user_text())
    # the run's first answer is gone with the compacted turns; the hook's context brings the run back
    assert '"workflowVersion"' not in after.text and "A run was started." in after.text
    assert f"SessionStart hook additional context: Active handrail run {run.id} of workflow coding-task" in (
        after.text
    )
    assert "Current step 1 of 5: understand" in after.text
    assert f'Next call: workflow_continue with runId \\"{run.id}\\"' in after.text
    assert world.model.unscripted == 0


def test_a_resumed_session_is_told_the_run_by_the_session_start_hook(world: World) -> None:
    run = Run(str(world.repo))
    world.model.play(run.start(), run.then(say("Started.")), *stops(3))
    first = world.claude("Give the cart's total a discount")
    assert first.exit_code == 0, first.stderr
    assert not any("Active handrail run" in r.text for r in world.model.played)  # no run at its start

    world.model.play(say("Resuming."), *stops(3))
    before = len(world.model.played)
    resumed = world.claude("Go on", "--resume", first.session_id)

    assert resumed.exit_code == 0, resumed.stderr
    asked = world.model.played[before]
    assert f"SessionStart hook additional context: Active handrail run {run.id} of workflow coding-task" in (
        asked.text
    )
    assert "Current step 1 of 5: understand" in asked.text
    # the resumed stop is refused as well: the run is bound to this session, and it comes back to it
    assert "stopping is refused 1 of 3 times" in world.model.played[before + 1].last_user_text()


def test_a_whole_run_through_claude_codes_own_mcp_client_then_edits_commits_and_a_stop_go_through(
    world: World,
) -> None:
    run = Run(str(world.repo))
    cart = str(world.repo / "src" / "cart.py")
    world.model.play(
        *run.up_to_implementing(),
        run.then(use("Write", file_path=cart, content=DISCOUNTED)),
        run.finish("implement-part", IMPLEMENTED),
        run.finish("verify", VERIFIED),
        run.then(use("Bash", command="git commit -am 'cart: total takes a discount'")),
        run.then(use("Write", file_path=str(world.repo / "NOTES.md"), content="Discounts are fractions.\n")),
        say("Done: the change is verified and committed."),
    )
    session = world.claude("Give the cart's total a discount")

    assert session.exit_code == 0, session.stderr
    assert [a.get("step", {}).get("id") for a in run.answers[:-1]] == [
        "understand",
        "plan",
        "implement-part",
        "verify",
    ]
    assert run.answers[-1]["status"] == "completed" and run.answers[-1]["accepted"] is True
    assert (world.repo / "src" / "cart.py").read_text() == DISCOUNTED
    assert (world.repo / "NOTES.md").read_text() == "Discounts are fractions.\n"
    assert world.log() == ["cart: total takes a discount", "cart: a total"]
    # the stop was let through at once: no follow-up after the last turn
    assert world.model.left == 0 and world.model.unscripted == 0
    assert run.id is not None
    record = world.run_record(run.id)
    assert record["run"]["status"] == "completed" and record["run"]["currentStep"] is None
    assert not [d for d in decisions(world, run.id) if d[1] in ("deny", "block")]


def test_a_script_that_takes_the_gates_hooks_out_mid_session_is_refused_and_the_hooks_stay(
    world: World,
) -> None:
    run = Run(str(world.repo))
    strip = world.root / "strip.py"  # out of the gate's sight: it reads command lines, not scripts
    strip.write_text(
        "import json\npath = '.claude/settings.json'\nsettings = json.load(open(path))\n"
        "settings['hooks'] = {}\nopen(path, 'w').write(json.dumps(settings))\n"
    )
    config: dict[str, Any] = {}

    def once_the_change_is_judged(request: Request) -> Turn:
        # Claude Code sees the change from its file watcher: the agent goes on once the gate judged it
        assert run.id is not None
        config.update(world.wait_for_gate_event(run.id, "config"))
        return use("Write", file_path=str(world.repo / "src" / "cart.py"), content=DISCOUNTED)

    world.model.play(
        run.start(),
        run.then(use("Bash", command=f"python3 {strip}")),
        once_the_change_is_judged,
        say("Done, I think."),
        *stops(3),
    )
    installed = (world.repo / ".claude" / "settings.json").read_bytes()
    session = world.claude("Give the cart's total a discount")

    assert session.exit_code == 0, session.stderr
    # what the script did was found after the tool call and undone: the settings as installed
    assert (world.repo / ".claude" / "settings.json").read_bytes() == installed
    assert run.id is not None
    violations = [e for e in world.run_record(run.id)["events"] if e["type"] == "violation"]
    assert violations and any(
        change["target"].endswith(".claude/settings.json") for change in violations[0]["changes"]
    )
    # ConfigChange judged the file as it then stood: stripped (refused), or already put back
    assert config["source"] == "project_settings"
    assert config["decision"] == "allow" or "leaves out the gate's hooks" in config["reason"]
    # the session kept the hooks it started with: the edit after the change is still refused
    told = results(world.model.played)
    assert REFUSED in told[2] and "does not allow edit:src/cart.py" in told[2]
    assert (world.repo / "src" / "cart.py").read_text() == SOURCE
    follow_ups = [r.last_user_text() for r in world.model.played[4:]]
    assert [f"stopping is refused {n} of 3 times" in text for n, text in enumerate(follow_ups, 1)] == [
        True
    ] * 3


@pytest.fixture
def plugin_world(tmp_path: Path) -> Iterator[World]:
    require_claude()
    model = ScriptedModel()
    try:
        yield World(tmp_path, model, plugin=True)
    finally:
        model.close()


def test_the_plugin_loaded_by_claude_code_serves_the_run_tools_and_holds_the_agent_to_the_step(
    plugin_world: World,
) -> None:
    world = plugin_world
    run = Run(str(world.repo), tools="mcp__plugin_handrail_handrail__")
    world.model.play(
        run.start(),
        run.then(use("Write", file_path=str(world.repo / "src" / "cart.py"), content=DISCOUNTED)),
        use("Bash", command="git commit -am 'cart: a discount'"),
        say("Done, I think."),
        *stops(3),
    )
    session = world.claude("Give the cart's total a discount")

    assert session.exit_code == 0, session.stderr
    init = next(m for m in session.messages if m.get("subtype") == "init")
    # the plugin's server, still starting or already connected (its answer to workflow_start below
    # is what shows it served)
    assert [(s["name"], s["source"]) for s in init["mcp_servers"]] == [("plugin:handrail:handrail", "plugin")]
    assert any(p["name"] == "handrail" and p["path"] == str(PLUGIN) for p in init["plugins"])
    # no hooks but the plugin's: nothing was installed in this repository or home
    assert not (world.repo / ".claude").exists() and not (world.home / ".claude" / "settings.json").exists()
    assert run.id is not None and run.answers[0]["step"]["id"] == "understand"
    told = results(world.model.played)
    assert REFUSED in told[1] and "does not allow edit:src/cart.py" in told[1]
    assert REFUSED in told[2] and "shell:git commit" in told[2]
    assert (world.repo / "src" / "cart.py").read_text() == SOURCE
    assert world.log() == ["cart: a total"]
    follow_ups = [r.last_user_text() for r in world.model.played[4:]]
    assert [f"stopping is refused {n} of 3 times" in text for n, text in enumerate(follow_ups, 1)] == [
        True
    ] * 3
    # the plugin's server is handrail's own to the gate: its run tools are recorded, never refused
    recorded = decisions(world, run.id)
    assert ("after-tool", "record", "mcp:handrail/workflow_start") in recorded


@pytest.mark.parametrize("folder", ["integrations", "integrations/claude-code-plugin"])
def test_claude_plugin_validate_passes_on_the_marketplace_and_the_plugin(tmp_path: Path, folder: str) -> None:
    require_claude()
    done = subprocess.run(
        [str(CLAUDE), "plugin", "validate", str(ROOT / folder)],
        env={"PATH": SYSTEM_PATH, "HOME": str(tmp_path), "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
             "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation passed" in done.stdout
    assert "error" not in done.stdout.lower()
