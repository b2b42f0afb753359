"""The service (handrail.service.core): what each `Service` in a process keeps to itself."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from handrail.catalog import load_catalog
from handrail.model.limits import Limits
from handrail.protocol.core import Protocol
from handrail.service.core import Service

pytestmark = pytest.mark.slow

# a lookahead sends the rule to the backtracking engine; on this text it never finishes
SLOW_RULE = {"type": "regex", "pattern": "(?=(a|aa)+$)", "message": "all a"}
SLOW_TEXT = "a" * 40 + "!"


def _protocol(folder: Path, regex_timeout_ms: int) -> Protocol:
    protocol = Protocol(
        Service(load_catalog(folder, bundled=False), Limits(regex_timeout_ms=regex_timeout_ms))
    )
    _send(protocol, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
    return protocol


def _send(protocol: Protocol, method: str, params: dict[str, Any]) -> dict[str, Any]:
    line = protocol.handle(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
    assert line is not None
    reply: dict[str, Any] = json.loads(line)
    return reply


def _cut_off_after(protocol: Protocol) -> Any:
    """The limit a timed-out workflow_validate names, as a client reads it off the wire."""
    arguments = {"workflowId": "slow", "stepId": "check", "output": SLOW_TEXT}
    reply = _send(protocol, "tools/call", {"name": "workflow_validate", "arguments": arguments})
    result = reply["result"]
    assert result["isError"] is True, reply
    error = result["structuredContent"]
    assert error["code"] == -32004 and error["data"]["limit"] == "regexTimeoutMs", reply
    return error["data"]["value"]


def test_two_services_in_one_process_each_apply_their_own_regex_time_limit(tmp_path: Path) -> None:
    step = {"id": "check", "title": "t", "prompt": "p", "validationCriteria": [SLOW_RULE]}
    workflow = {"id": "slow", "name": "S", "description": "d", "version": "1.0.0", "steps": [step]}
    (tmp_path / "slow.json").write_text(json.dumps(workflow), encoding="utf-8")
    short = _protocol(tmp_path, regex_timeout_ms=20)
    longer = _protocol(tmp_path, regex_timeout_ms=60)  # made second: it must not change the first's
    assert _cut_off_after(short) == 20
    assert _cut_off_after(longer) == 60

    # and at the same time, from two threads
    seen: dict[int, Any] = {}
    threads = [
        threading.Thread(target=lambda p=p, ms=ms: seen.__setitem__(ms, _cut_off_after(p)))
        for p, ms in ((short, 20), (longer, 60))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert seen == {20: 20, 60: 60}


def test_a_step_encoded_once_is_spliced_intact_into_a_reply_orjson_cannot_encode(tmp_path: Path) -> None:
    """A lone surrogate in a loop item takes the reply through the standard library's
    encoder, which must read the step and guidance kept already encoded (engine/result_json)."""
    from tests.helpers.server import Server

    inner = {"id": "each", "title": "Each", "prompt": "Do the item.", "guidance": ["Carefully."]}
    loop = {
        "id": "all",
        "type": "loop",
        "title": "All",
        "loop": {"type": "forEach", "items": "items", "itemVar": "item", "maxIterations": 5},
        "body": "each",
    }
    workflow = {"id": "items", "name": "I", "description": "d", "version": "1.0.0", "steps": [loop, inner]}
    (tmp_path / "items.json").write_text(json.dumps(workflow), encoding="utf-8")
    with Server("--no-bundled", "--workflows", str(tmp_path)) as server:
        server.initialize()
        arguments = {"workflowId": "items", "completedSteps": [], "context": {"items": ["a"]}}
        plain = server.request("workflow_next", arguments)
        # the same step again, this time with a value orjson refuses in the reply
        server.send_raw(
            b'{"jsonrpc":"2.0","id":77,"method":"workflow_next","params":{"workflowId":"items",'
            b'"completedSteps":[],"context":{"items":["\\ud800"]}}}\n'
        )
        odd = server.response(77)
    assert plain["result"]["step"] == odd["result"]["step"]
    assert plain["result"]["step"]["prompt"] == "Do the item."
    assert odd["result"]["loop"]["item"] == "\ud800"


BROKEN_BUT_LISTED = {
    "id": "broken-wf",
    "name": "Broken",
    "description": "Its id and name read fine; one step has an unknown field.",
    "version": "1.0.0",
    "steps": [{"id": "plan", "title": "Plan", "prompt": "Plan it.", "bogus": 1}],
}


def test_asking_for_a_workflow_whose_file_is_broken_says_so_and_why(tmp_path: Path) -> None:
    from tests.helpers.server import Server

    folder = tmp_path / "flows"
    folder.mkdir()
    (folder / "broken-wf.json").write_text(json.dumps(BROKEN_BUT_LISTED, indent=2), "utf-8")
    file = str(folder / "broken-wf.json")
    with Server("--no-bundled", "--workflows", str(folder)) as server:
        server.initialize()
        for _ in range(2):  # listed and compiled on first use, then known broken
            error = server.error("workflow_get", {"id": "broken-wf"})
            assert error["code"] == -32001
            said = f"Workflow not found: `broken-wf` is in a broken file: {file}:11:7: error H101"
            assert error["message"].startswith(said), error["message"][:300]
            assert "did you mean" not in error["message"]
            assert error["data"]["file"] == file
        called = server.call("workflow_get", {"id": "broken-wf"})
        text = called["content"][0]["text"]
        assert called["isError"] is True and "is in a broken file" in text and "handrail check" in text
