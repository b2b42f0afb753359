"""Admitting a tool's arguments: the exec-written quick yes (service/argument_check.py)
against a fastjsonschema validator compiled once, alone and after the limits it also
checks, on the arguments the usual calls send. Ratios to the quick yes per call, and
of the whole call (`Service.call`, handler included) either way, in the same run,
alternated; each the median of 9 pairs.

    python -m benchmarks.argument_bench
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastjsonschema

from benchmarks.timing import per_call_ns
from handrail.catalog import load_catalog
from handrail.model.limits import Limits
from handrail.service.argument_limits import admission, check_limits
from handrail.service.core import Service, default_runs
from handrail.service.definitions import tools

CALLS: dict[str, dict[str, Any]] = {
    "workflow_next": {
        "workflowId": "coding-task",
        "completedSteps": ["understand", "plan"],
        "context": {"taskScope": "large", "complexity": 0.8},
    },
    "workflow_validate": {
        "workflowId": "coding-task",
        "stepId": "understand",
        "output": "I have analyzed the requirements and the edge cases. " * 8,
    },
    "workflow_get": {"id": "coding-task"},
}
PAIRS = 9


def input_schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = next(t["inputSchema"] for t in tools() if t["name"] == name)
    return schema


def schema_admit(name: str, limits: Limits) -> tuple[Callable[[Any], Any], Callable[[dict[str, Any]], None]]:
    """The tool's input schema by a fastjsonschema validator compiled once, alone and
    after the limits: the way in without the quick yes."""
    validate = fastjsonschema.compile(input_schema(name), use_default=False)

    def admit(arguments: dict[str, Any]) -> None:
        check_limits(limits, name, arguments)
        validate(arguments)

    return validate, admit


def measure(service: Service, name: str, arguments: dict[str, Any]) -> str:
    """One line: the quick yes per call, and what the other way costs against it."""
    limits = service.limits
    service.call(name, arguments)  # the plan made, the workflow compiled
    plan = service._plans[name]
    quick = admission(limits, name, input_schema(name))
    assert quick is not None and quick(arguments)
    validate, admit = schema_admit(name, limits)
    alone, schema_only, both, whole = [], [], [], []
    for _ in range(PAIRS):  # alternated, so a slower spell of the machine hits both sides
        quick_ns = per_call_ns(lambda: quick(arguments))
        alone.append(quick_ns)
        schema_only.append(per_call_ns(lambda: validate(arguments)) / quick_ns)
        both.append(per_call_ns(lambda: admit(arguments)) / quick_ns)
        service._plans[name] = (None, admit, *plan[2:])
        slow_call = per_call_ns(lambda: service.call(name, arguments))
        service._plans[name] = plan
        whole.append(slow_call / per_call_ns(lambda: service.call(name, arguments)))
    median = statistics.median
    return (
        f"{name:18} quick yes {median(alone) / 1000:.2f} µs; fastjsonschema {median(schema_only):.2f}x, "
        f"limits + fastjsonschema {median(both):.2f}x; the whole call {median(whole):.3f}x"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as home:
        runs = default_runs(f"sqlite:///{Path(home) / 'runs.db'}")  # never opened: catalog tools only
        service = Service(load_catalog(), Limits(), runs=runs)
        for name, arguments in CALLS.items():
            print(measure(service, name, arguments))
        service.close()


if __name__ == "__main__":
    main()
