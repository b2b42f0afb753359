"""Hostile workflow documents (benchmarks/hostile.py) against a real `handrail start`
and `handrail check`: each is answered promptly or ends at a limit that the error
names, and the server goes on answering. Speed is measured in benchmarks; the bounds
here only tell "answers" from "hangs" on a loaded machine.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks import hostile
from handrail.catalog import load_catalog
from handrail.patterns import compiled
from handrail.protocol.core import Protocol
from handrail.rules import closures as rules
from handrail.service.core import Service
from tests.helpers.server import Server

pytestmark = pytest.mark.slow

BUDGET_SECONDS = 3  # the server's --max-request-seconds: room for a loaded machine
HANGS = 30.0  # far past any budget: a call this slow is a hang
EXACT = 1180591620717411303425  # 2**70 + 1: a double cannot hold it


def _write(folder: Path, *documents: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    an_hour_ago = time.time() - 3600  # settled files: the catalog does not read them again
    for document in documents:
        path = folder / f"{document['id']}.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        os.utime(path, (an_hour_ago, an_hour_ago))


def _exact_integers() -> dict[str, Any]:
    exact = hostile.step("exact", runCondition={"var": "x", "equals": EXACT})
    return hostile.workflow([exact, hostile.step("after")], "exact-integers")


def _word_boundaries() -> dict[str, Any]:
    rule = {"type": "regex", "pattern": r"\b(\w+\s?)+\b$", "message": "Words only"}
    return hostile.workflow([hostile.step("words", validationCriteria=[rule])], "word-boundaries")


SERVED = (
    hostile.nested_loops(3),
    hostile.nested_loops(3, reads_iteration=True),
    hostile.entangled_loops(3),
    hostile.doubling_by_depth(),
    hostile.recursive_properties(),
    hostile.catastrophic_keys(),
    hostile.amplifying_template(),
    _exact_integers(),
    _word_boundaries(),
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("hostile")
    _write(folder, *SERVED)
    # each backtracking search may take 5 s: only the request's budget can end a long run
    options = ("--max-request-seconds", str(BUDGET_SECONDS), "--regex-timeout", "5000")
    with Server("--no-bundled", "--workflows", str(folder), *options) as s:
        s.initialize()
        yield s


def _timed(server: Server, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], float]:
    start = time.monotonic()
    reply = _request(server, method, params)
    return reply, time.monotonic() - start


def _request(server: Server, method: str, params: dict[str, Any]) -> dict[str, Any]:
    rid = server.new_id()
    server.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    return server.response(rid, timeout=HANGS)


def _still_answers(server: Server) -> None:
    listed = server.result("workflow_list", {})
    assert {w["id"] for w in listed["workflows"]} >= {d["id"] for d in SERVED}


def _over_budget(reply: dict[str, Any], limit: str) -> dict[str, Any]:
    assert "error" in reply, reply
    error: dict[str, Any] = reply["error"]
    assert error["code"] == -32000
    assert error["data"]["limit"] == limit
    assert str(error["data"]["value"]) in error["data"]["details"]
    return error


# -- 1. loops --------------------------------------------------------------------------


@pytest.mark.parametrize("reads_iteration", [False, True])
def test_three_nested_loops_with_skipped_bodies_are_decided_at_once(
    server: Server, reads_iteration: bool
) -> None:
    wid = hostile.nested_loops(3, reads_iteration=reads_iteration)["id"]
    params = {"workflowId": wid, "completedSteps": ["first"], "context": hostile.NESTED_CONTEXT}
    reply, seconds = _timed(server, "workflow_next", params)
    result = reply["result"]
    assert result["step"]["id"] == "last"
    assert result["completedSteps"] == ["first", "loop-1"]
    assert result["state"] == {"loops": []}
    for level in (1, 2, 3):
        # once each, however many times the inner loops ran
        assert result["guidance"]["prompt"].count(f"Loop `loop-{level}` stopped at its limit of 1000") == 1
    assert seconds < HANGS  # answered, not cut off (this took minutes before)


def test_loops_that_read_each_others_iterations_end_at_the_time_budget(server: Server) -> None:
    params = {"workflowId": "entangled-loops", "completedSteps": ["first"], "context": {"go": True}}
    reply, seconds = _timed(server, "workflow_next", params)
    _over_budget(reply, "maxRequestSeconds")
    assert seconds < HANGS
    _still_answers(server)


# -- 3, 7. schema rules and their regexes -------------------------------------------------


def test_a_schema_that_doubles_per_level_of_the_output_ends_at_the_time_budget(server: Server) -> None:
    params = {"workflowId": "doubling-by-depth", "stepId": "answer", "output": hostile.nested_output(60)}
    reply, _ = _timed(server, "workflow_validate", params)
    _over_budget(reply, "maxRequestSeconds")
    _still_answers(server)


def test_a_schema_following_the_output_past_the_stack_is_a_validation_error(server: Server) -> None:
    params = {"workflowId": "recursive-properties", "stepId": "answer", "output": hostile.nested_output(1000)}
    reply, _ = _timed(server, "workflow_validate", params)
    assert reply["error"]["code"] == -32004, reply  # was -32603 (RecursionError)
    assert "nests too deeply" in reply["error"]["data"]["details"]
    shallow = {**params, "output": hostile.nested_output(5, {"b": 1})}
    assert _timed(server, "workflow_validate", shallow)[0]["result"]["valid"] is True


def test_backtracking_searches_over_many_keys_share_one_time_budget(server: Server) -> None:
    # each key's search could run 5 s (--regex-timeout 5000): 300 keys, 25 minutes
    params = {
        "workflowId": "catastrophic-keys",
        "stepId": "answer",
        "output": hostile.catastrophic_output(300),
    }
    reply, seconds = _timed(server, "workflow_validate", params)
    _over_budget(reply, "maxRequestSeconds")
    assert seconds < HANGS
    _still_answers(server)


# -- 5. templates -------------------------------------------------------------------------


def test_a_template_that_amplifies_the_context_is_refused_naming_the_reply_limit(server: Server) -> None:
    params = {"workflowId": "amplifying-template", "completedSteps": [], "context": {"x": "y" * 100_000}}
    reply, seconds = _timed(server, "workflow_next", params)
    error = _over_budget(reply, "maxReplyBytes")
    assert "rendered" in error["data"]["details"]
    assert seconds < HANGS
    small = {**params, "context": {"x": "y"}}
    assert _timed(server, "workflow_next", small)[0]["result"]["step"]["prompt"] == "y" * 1600


# -- 10. numbers ------------------------------------------------------------------------


def test_integers_past_64_bits_in_the_context_stay_exact(server: Server) -> None:
    for value, expected in ((EXACT, "exact"), (EXACT - 1, "after")):
        rid = server.new_id()
        line = (
            f'{{"jsonrpc":"2.0","id":{rid},"method":"workflow_next","params":'
            f'{{"workflowId":"exact-integers","completedSteps":[],"context":{{"x":{value}}}}}}}\n'
        )
        server.send_raw(line.encode())
        assert server.response(rid)["result"]["step"]["id"] == expected


def test_a_number_too_large_to_represent_is_refused_naming_where_it_is(server: Server) -> None:
    rid = server.new_id()
    line = (
        f'{{"jsonrpc":"2.0","id":{rid},"method":"workflow_next","params":'
        '{"workflowId":"exact-integers","completedSteps":[],"context":{"a":{"b":[1,1e400]}}}}\n'
    )
    server.send_raw(line.encode())
    error = server.response(rid)["error"]
    assert error["code"] == -32602
    assert "context.a.b[1]" in error["data"]["details"]


# -- 12. word boundaries --------------------------------------------------------------------


def test_word_boundaries_on_non_ascii_text_are_answered_in_linear_time(server: Server) -> None:
    text = "un café noir " * 20_000
    for output, valid in ((text + "!", False), (text.strip(), True)):
        params = {"workflowId": "word-boundaries", "stepId": "words", "output": output}
        reply, seconds = _timed(server, "workflow_validate", params)
        assert reply["result"]["valid"] is valid, reply  # was -32004, cut off on the backtracking engine
        assert seconds < HANGS


# -- 2. compiling -------------------------------------------------------------------------


def test_handrail_check_compiles_a_wide_condition_and_a_large_workflow(tmp_path: Path) -> None:
    _write(tmp_path, hostile.wide_condition(16_000), hostile.many_steps(2_700))
    assert (tmp_path / "many-steps.json").stat().st_size > 900_000
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "check", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,  # minutes before; benchmarks.run measures it
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 errors" in done.stdout


def test_workflow_validate_json_refuses_what_is_too_large_to_check_naming_the_limit(server: Server) -> None:
    for document, limit in (
        (hostile.many_steps(5_001, 1), "maxWorkflowSteps"),
        (hostile.deep_condition(120), "maxWorkflowDepth"),
    ):
        reply, _ = _timed(server, "workflow_validate_json", {"workflow": json.dumps(document)})
        error = reply["error"]
        assert (error["code"], error["data"]["limit"]) == (-32602, limit)
    fine = json.dumps(hostile.wide_condition(3_000))
    assert _timed(server, "workflow_validate_json", {"workflow": fine})[0]["result"]["valid"] is True


# -- 7. schema rules flagged by the compiler ------------------------------------------------


def test_handrail_check_flags_schemas_that_recurse_or_double(tmp_path: Path) -> None:
    shallow = {**hostile.doubling_schema(8), "id": "doubling-shallow"}  # 2^8 checks: fine
    _write(tmp_path, hostile.self_reference(), hostile.doubling_schema(24), shallow)
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "check", "--format", "json", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    found = {(d["file"].rsplit("/", 1)[-1], d["code"]) for d in _diagnostics(done.stdout)}
    assert ("self-reference.json", "H407") in found
    assert ("doubling-schema.json", "H408") in found
    assert not {code for name, code in found if name == "doubling-shallow.json"}


def _diagnostics(output: str) -> list[dict[str, Any]]:
    data = json.loads(output)
    if isinstance(data, dict):
        items: list[dict[str, Any]] = data.get("diagnostics", [])
        return items
    return list(data)


# -- 4. caches --------------------------------------------------------------------------


def test_workflows_sent_to_workflow_validate_json_leave_no_cache_behind() -> None:
    protocol = Protocol(Service(load_catalog(bundled=True)))
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
    protocol.handle(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}))
    validators, regexes = len(rules._validators), len(compiled._cache)
    for i in range(300):
        schema = {"type": "object", "properties": {f"p{i}": {"type": "string", "pattern": f"^x{i}(a|b)+$"}}}
        document = hostile.schema_rule(schema, f"client-{i}")
        document["steps"].append(
            hostile.step("text", validationCriteria=[{"type": "regex", "pattern": f"y{i}+", "message": "m"}])
        )
        line = {
            "jsonrpc": "2.0",
            "id": i + 1,
            "method": "workflow_validate_json",
            "params": {"workflow": json.dumps(document)},
        }
        reply = json.loads(protocol.handle(json.dumps(line)) or b"null")
        assert reply["result"]["valid"] is True, reply
    assert (len(rules._validators), len(compiled._cache)) == (validators, regexes)


# -- the fuzzers' share: random hostile documents -------------------------------------------


def test_random_hostile_documents_are_each_answered_within_the_budget(server: Server) -> None:
    rng = random.Random(12)
    for _ in range(25):
        document = hostile.random_document(rng)
        reply, seconds = _timed(server, "workflow_validate_json", {"workflow": json.dumps(document)})
        assert "result" in reply or reply["error"]["code"] in (-32000, -32602), reply
        assert seconds < BUDGET_SECONDS + 5  # the budget, and slack for a loaded machine
    _still_answers(server)
