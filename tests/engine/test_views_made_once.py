"""Views and guidance the engine makes once per step (engine/shared.py) still follow
the context on every call: a confirmation condition's outcome, templates, and which
variables a skipped step waits on, asked of a real server in alternation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.server import Server

pytestmark = pytest.mark.slow

WORKFLOW = {
    "id": "views-made-once",
    "name": "Views made once",
    "description": "A step confirmed by condition, a templated step, a step that waits.",
    "version": "1.0.0",
    "steps": [
        {
            "id": "confirmed-by-condition",
            "title": "Plan",
            "prompt": "Write the plan.",
            "requireConfirmation": {
                "or": [{"var": "mode", "equals": "careful"}, {"var": "mode", "equals": "slow"}]
            },
        },
        {
            "id": "templated",
            "title": "Build {{target}}",
            "prompt": "Build {{ target }} for {{who.name}}; {{ target + 1 }} stays as written.",
        },
        {
            "id": "waits",
            "title": "Ship",
            "prompt": "Ship it.",
            "runCondition": {"var": "ship", "equals": True},
        },
    ],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder: Path = tmp_path_factory.mktemp("workflows")
    (folder / "views.json").write_text(json.dumps(WORKFLOW), "utf-8")
    with Server("--no-bundled", "--workflows", str(folder)) as s:
        s.initialize()
        yield s


def next_of(server: Server, completed: list[str], context: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = server.result(
        "workflow_next", {"workflowId": "views-made-once", "completedSteps": completed, "context": context}
    )
    return result


def test_a_confirmation_condition_is_decided_on_every_call(server: Server) -> None:
    for mode, expected in [("careful", True), ("fast", False), ("slow", True), ("fast", False)]:
        result = next_of(server, [], {"mode": mode})
        assert result["step"]["id"] == "confirmed-by-condition"
        assert result["step"]["requireConfirmation"] is expected, (mode, result)
        assert result["guidance"]["requiresConfirmation"] is expected, (mode, result)


def test_templates_are_filled_from_each_calls_context(server: Server) -> None:
    for target in ["api", "cli", "api"]:
        step = next_of(server, ["confirmed-by-condition"], {"target": target})["step"]
        assert step["title"] == f"Build {target}"
        assert (
            step["prompt"] == f"Build {target} for [unset: who.name]; {{{{ target + 1 }}}} stays as written."
        )


def test_a_skipped_step_names_what_it_waits_on_only_when_nothing_can_run(server: Server) -> None:
    done = ["confirmed-by-condition", "templated"]
    blocked = next_of(server, done, {})
    assert blocked["step"] is None and blocked["isComplete"] is False
    assert "`ship` (the conditions look for true)" in blocked["guidance"]["prompt"], blocked
    finished = next_of(server, done, {"ship": False})
    assert finished["isComplete"] is True, finished


def test_numbers_past_64_bits_in_the_context_are_shown_exactly(server: Server) -> None:
    line = (
        b'{"jsonrpc":"2.0","id":"wide","method":"workflow_next","params":{"workflowId":"views-made-once",'
        b'"completedSteps":["confirmed-by-condition"],"context":{"target":%d}}}\n'
    )
    for number in (2**70 + 1, 10**40):
        server.send_raw(line % number)
        assert server.response("wide")["result"]["step"]["title"] == f"Build {number}"
    server.send_raw(line.replace(b"%d", b"1e19"))
    assert server.response("wide")["result"]["step"]["title"] == "Build 1e+19"
