"""In-process figures: compile time, and next/validate per call against the naive
baseline (benchmarks/naive.py) on the same inputs, in the same process.

A next/validate figure is the engine's call plus its conversion to the tools' JSON
(handrail.engine.result_json), as the service answers: the baseline builds that JSON too.

`workloads()` is shared with tests/benchmarks: the test checks every workload's
answer (syrupy snapshot) and that handrail and the baseline agree, so a figure
here can never be the speed of a wrong answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import naive, naive_next
from benchmarks.corpus_path import corpus_folder
from handrail.compiler import compile_text
from handrail.engine import next_step, validate_output
from handrail.engine.result_json import next_json, verdict_json
from handrail.model.workflow import Loop, Step, Workflow

ROOT = Path(__file__).resolve().parents[1]
CORPUS = corpus_folder()
SPEC_RULES = ROOT / "spec" / "cases" / "rules"

SAMPLE_OUTPUT = (
    "## Title: Add login endpoint\n## Description: POST /auth/login accepts email and password, "
    "validates credentials with bcrypt and returns a JWT. Handles 401 unauthorized. "
    "Tests: unit test and integration test with coverage. Evidence: logs. Key Features: fast. "
    "final summary of the requirements, edge cases and optimization notes.\n" * 2
)


@dataclass(frozen=True)
class Workload:
    name: str
    kind: str  # compile | next | validate
    handrail: Callable[[], Any]
    baseline: Callable[[], Any] | None
    answer: Callable[[], Any]  # what the test snapshots
    agree: Callable[[], bool] | None = None  # handrail and baseline give the same decision


def workflow_files() -> list[Path]:
    files = [p for p in sorted(CORPUS.rglob("*.json")) if p.name != "workflow.schema.json"]
    return files + sorted((ROOT / "workflows").glob("*.json"))


def _label(path: Path) -> str:
    return path.relative_to(CORPUS).as_posix() if path.is_relative_to(CORPUS) else f"bundled/{path.name}"


def compiled_workflows() -> list[tuple[str, dict[str, Any], Workflow]]:
    out = []
    for path in workflow_files():
        text = path.read_text("utf-8")
        compiled = compile_text(text, str(path))
        if compiled.workflow is not None:
            out.append((_label(path), json.loads(text), compiled.workflow))
    return out


def _midway(workflow: Workflow) -> tuple[list[str], dict[str, Any]]:
    """completedSteps and context halfway through a plain walk of the top-level steps."""
    completed: list[str] = []
    context: dict[str, Any] = {}
    plain = [sid for sid in workflow.sequence if isinstance(workflow.nodes[sid], Step)]
    for sid in plain[: len(plain) // 2]:
        completed.append(sid)
    for node in workflow.nodes.values():
        condition = getattr(node, "run_condition", None)
        if condition is not None:
            for name, wanted in condition.looks_for:
                if wanted and "." not in name:
                    context.setdefault(name, wanted[0])
    return completed, context


def _in_loop(workflow: Workflow) -> tuple[list[str], dict[str, Any], dict[str, Any]] | None:
    """completedSteps, context and state of a walk that has reached a loop's second
    iteration (or its first, for a loop that runs once); None when no walk gets there."""
    _, context = _midway(workflow)
    for node in workflow.nodes.values():
        if isinstance(node, Loop):
            if node.items:
                context.setdefault(node.items.split(".")[0], ["first", "second", "third"])
            if isinstance(node.count, str):
                context.setdefault(node.count.split(".")[0], 3)
    completed: list[str] = []
    state: dict[str, Any] = {"loops": []}
    for _ in range(60):
        result = next_json(next_step(workflow, completed, context, state=state))
        if result["step"] is None:
            return None
        if "loop" in result and (result["loop"]["iteration"] >= 2 or len(result["state"]["loops"]) > 1):
            return result["completedSteps"], context, result["state"]
        completed, state = [*result["completedSteps"], result["step"]["id"]], result["state"]
    return None


def workloads() -> Iterator[Workload]:
    for path in workflow_files():
        text = path.read_text("utf-8")
        yield Workload(
            f"compile {_label(path)}",
            "compile",
            lambda t=text: compile_text(t),
            lambda t=text: json.loads(t),
            lambda t=text: [d.code for d in compile_text(t).diagnostics],
        )
    for label, document, workflow in compiled_workflows():
        points: list[tuple[str, tuple[list[str], dict[str, Any], dict[str, Any] | None]]] = [
            ("start", ([], {}, None)),
            ("midway", (*_midway(workflow), None)),
        ]
        inside = _in_loop(workflow)
        if inside is not None:
            points.append(("in-loop", inside))
        for where, (completed, context, state) in points:

            def ours(
                w: Workflow = workflow,
                c: list[str] = completed,
                x: dict[str, Any] = context,
                s: dict[str, Any] | None = state,
            ) -> Any:
                return next_json(next_step(w, c, x, state=s))

            def base(
                d: dict[str, Any] = document,
                c: list[str] = completed,
                x: dict[str, Any] = context,
                s: dict[str, Any] | None = state,
            ) -> Any:
                return naive_next.next_full(d, c, x, s)

            def same(o: Callable[[], Any] = ours, b: Callable[[], Any] = base) -> bool:
                return _json(o()) == _json(b())  # the whole answer, byte for byte

            yield Workload(f"next {where} {label}", "next", ours, base, lambda o=ours: _brief(o()), same)
        for node in workflow.nodes.values():
            if isinstance(node, Step) and node.rules:

                def check(w: Workflow = workflow, s: str = node.id) -> Any:
                    return verdict_json(validate_output(w, s, SAMPLE_OUTPUT, {}))

                def naive_check(d: dict[str, Any] = document, s: str = node.id) -> Any:
                    return naive.validate(d, s, SAMPLE_OUTPUT, {})

                yield Workload(
                    f"validate {label}#{node.id}",
                    "validate",
                    check,
                    naive_check,
                    check,
                    lambda c=check, n=naive_check: c()["valid"] == n(),
                )
    yield from _golden_rule_workloads()


def _golden_rule_workloads() -> Iterator[Workload]:
    for file in sorted(SPEC_RULES.glob("*.json")) if SPEC_RULES.exists() else []:
        for case in json.loads(file.read_text("utf-8")).get("cases", []):
            document = {
                "id": "bench",
                "name": "bench",
                "description": "bench",
                "version": "1.0.0",
                "steps": [
                    {"id": "step", "title": "t", "prompt": "p", "validationCriteria": case["criteria"]}
                ],
            }
            compiled = compile_text(json.dumps(document)).workflow
            if compiled is None:
                continue
            output, context = case["output"], case.get("context", {})

            def ours(w: Workflow = compiled, o: str = output, x: dict[str, Any] = context) -> Any:
                return verdict_json(validate_output(w, "step", o, x))

            def base(d: dict[str, Any] = document, o: str = output, x: dict[str, Any] = context) -> Any:
                return naive.validate(d, "step", o, x)

            # the baseline interprets only the JSON form of conditions
            baseline = None if _has_text_condition(case["criteria"]) else base
            yield Workload(f"validate golden {file.stem}/{case['name']}", "validate", ours, baseline, ours)


def _has_text_condition(value: Any) -> bool:
    if isinstance(value, dict):
        return isinstance(value.get("condition"), str) or any(_has_text_condition(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_text_condition(v) for v in value)
    return False


def _json(value: Any) -> bytes:
    import orjson

    return orjson.dumps(value)


def _brief(result: dict[str, Any]) -> dict[str, Any]:
    step = result["step"]
    return {
        "step": step["id"] if step else None,
        "isComplete": result["isComplete"],
        "state": result["state"],
    }
