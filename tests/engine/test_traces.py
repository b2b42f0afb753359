"""Golden decision traces (spec/cases/traces/*.json), run through the tools.

Each trace holds an inline workflow and a list of tool calls with the subset of
each result that must match; the full results are snapshotted as well. The
format, and the `$prev` shorthand for sending back what the previous
workflow_next returned, are described in spec/cases/traces/README.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from handrail.catalog import Entry, Snapshot, Source
from handrail.compiler import compile_text
from handrail.model.errors import HandrailError
from handrail.model.workflow import Workflow
from handrail.service.core import Service
from tests.conftest import SPEC

pytestmark = pytest.mark.slow

TRACES = SPEC / "cases" / "traces"
TOOLS = {"next": "workflow_next", "validate": "workflow_validate"}
PREV = "$prev"
PREV_PLUS_STEP = "$prev+step"
ABSENT = "$absent"


def trace_files() -> list[Path]:
    return sorted(TRACES.glob("*.json"))


class _OneWorkflow:
    """A catalog stand-in that serves exactly one compiled workflow."""

    def __init__(self, workflow: Workflow) -> None:
        entry = Entry(workflow, Source("cli", Path("<trace>")))
        self._snapshot = Snapshot(MappingProxyType({workflow.id: entry}), (), (), MappingProxyType({}))

    def snapshot(self) -> Snapshot:
        return self._snapshot


def compile_trace_workflow(trace: dict[str, Any]) -> Workflow:
    compiled = compile_text(json.dumps(trace["workflow"]), "<trace>")
    assert compiled.workflow is not None, [d.render() for d in compiled.errors]
    return compiled.workflow


@dataclass
class TraceRun:
    """The outcome of every call of one trace: results, or errors as {code, message, data}."""

    outcomes: list[dict[str, Any]] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)


def resolve(params: dict[str, Any], workflow_id: str, previous: dict[str, Any] | None) -> dict[str, Any]:
    """The call's real params: workflowId filled in, `$prev` placeholders replaced."""
    out = {"workflowId": workflow_id, **params}
    for key, value in params.items():
        if value not in (PREV, PREV_PLUS_STEP):
            continue
        assert previous is not None, f"`{value}` with no earlier successful workflow_next"
        if key == "completedSteps":
            steps = list(previous["completedSteps"])
            if value == PREV_PLUS_STEP:
                assert previous["step"] is not None, "`$prev+step` after a result with no step"
                steps.append(previous["step"]["id"])
            out[key] = steps
        elif key == "state" and value == PREV:
            out[key] = previous["state"]
        else:
            raise AssertionError(f"`{value}` is not allowed for `{key}`")
    return out


def mismatches(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Objects match as subsets (a key expected as "$absent" must be missing), lists element
    by element, `{"$contains": ...}` as substrings, everything else exactly (1 and true differ)."""
    if isinstance(expected, dict) and set(expected) == {"$contains"}:
        needles = expected["$contains"]
        needles = [needles] if isinstance(needles, str) else needles
        if not isinstance(actual, str):
            return [f"{where or '/'}: expected a string, got {actual!r}"]
        return [f"{where or '/'}: {actual!r} lacks {n!r}" for n in needles if n not in actual]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where or '/'}: expected an object, got {actual!r}"]
        out: list[str] = []
        for key, value in expected.items():
            if value == ABSENT:
                if key in actual:
                    out.append(f"{where}/{key}: expected no such key, got {actual[key]!r}")
            elif key not in actual:
                out.append(f"{where}/{key}: missing")
            else:
                out.extend(mismatches(value, actual[key], f"{where}/{key}"))
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where or '/'}: expected {expected!r}, got {actual!r}"]
        return [
            m
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for m in mismatches(e, a, f"{where}/{i}")
        ]
    if type(expected) is not type(actual) or expected != actual:
        return [f"{where or '/'}: expected {expected!r}, got {actual!r}"]
    return []


def run_trace(trace: dict[str, Any]) -> TraceRun:
    workflow = compile_trace_workflow(trace)
    service = Service(_OneWorkflow(workflow))  # type: ignore[arg-type]
    record = TraceRun()
    previous: dict[str, Any] | None = None
    for index, call in enumerate(trace["calls"]):
        params = resolve(call.get("params", {}), workflow.id, previous)
        expect = call["expect"]
        try:
            result = service.call(TOOLS[call["tool"]], params)
        except HandrailError as exc:
            outcome: dict[str, Any] = {"error": {"code": exc.code, "message": exc.message, "data": exc.data}}
        else:
            outcome = result
            if call["tool"] == "next":
                previous = result
        record.outcomes.append(outcome)
        where = f"call {index} ({call['tool']})"
        if "error" in expect:
            error = outcome.get("error")
            if error is None:
                record.mismatches.append(f"{where}: expected error {expect['error']}, got a result")
                continue
            wanted = dict(expect["error"])
            contains = wanted.pop("messageContains", None)
            record.mismatches.extend(f"{where} error{m}" for m in mismatches(wanted, error))
            if contains is not None and contains not in error["message"]:
                record.mismatches.append(f"{where}: message {error['message']!r} lacks {contains!r}")
        elif "error" in outcome:
            record.mismatches.append(f"{where}: unexpected error {outcome['error']}")
        else:
            record.mismatches.extend(f"{where}{m}" for m in mismatches(expect, outcome))
    return record


def load(path: Path) -> dict[str, Any]:
    trace: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return trace


def test_there_are_traces() -> None:
    assert len(trace_files()) >= 20


@pytest.mark.parametrize("path", trace_files(), ids=lambda p: p.stem)
def test_trace_is_well_formed(path: Path) -> None:
    trace = load(path)
    assert set(trace) == {"description", "workflow", "calls"}
    assert trace["description"].strip()
    assert trace["calls"], "a trace makes at least one call"
    for call in trace["calls"]:
        assert set(call) <= {"tool", "params", "expect", "note"}
        assert call["tool"] in TOOLS
        assert isinstance(call["expect"], dict) and call["expect"], "every call states what it expects"


@pytest.mark.parametrize("path", trace_files(), ids=lambda p: p.stem)
def test_trace_meets_every_expectation(path: Path) -> None:
    record = run_trace(load(path))
    assert record.mismatches == []


@pytest.mark.parametrize("path", trace_files(), ids=lambda p: p.stem)
def test_trace_results_match_their_snapshot(path: Path, snapshot: Any) -> None:
    assert run_trace(load(path)).outcomes == snapshot


def test_the_matcher_treats_objects_as_subsets_and_lists_exactly() -> None:
    assert mismatches({"a": 1}, {"a": 1, "b": 2}) == []
    assert mismatches({"a": [1]}, {"a": [1, 2]}) != []
    assert mismatches({"a": True}, {"a": 1}) != []
    assert mismatches({"$contains": ["x", "y"]}, "xyz") == []
    assert mismatches({"$contains": "q"}, "xyz") != []


def test_prev_placeholders_send_back_the_previous_result() -> None:
    previous = {"completedSteps": ["a"], "state": {"loops": []}, "step": {"id": "b"}}
    params = {"completedSteps": PREV_PLUS_STEP, "state": PREV}
    assert resolve(params, "w-id", previous) == {
        "workflowId": "w-id",
        "completedSteps": ["a", "b"],
        "state": {"loops": []},
    }
    assert resolve({"completedSteps": PREV}, "w-id", previous)["completedSteps"] == ["a"]
