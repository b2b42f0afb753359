"""handrail: step-by-step workflows for AI agents, compiled once and served over MCP.

Library use, without MCP:

    from handrail import load_catalog, next_step, validate_output
    catalog = load_catalog("my-workflows/")
    workflow = catalog.snapshot().get("coding-task")
    result = next_step(workflow, completed_steps=[], context={})  # a NextResult
    verdict = validate_output(workflow, result.step.id, "what I did", {})  # a Verdict

The result types (NextResult, StepView, Guidance, ...) are frozen dataclasses, see
handrail.engine.results and docs/library.md.

The names below are imported on first use, so that `handrail start` can answer
`initialize` before the compiler and the engine are loaded.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_PUBLIC = {
    "Catalog": "handrail.catalog",
    "load_catalog": "handrail.catalog",
    "Compiled": "handrail.compiler",
    "compile_path": "handrail.compiler",
    "compile_text": "handrail.compiler",
    "next_step": "handrail.engine",
    "validate_output": "handrail.engine",
    "Guidance": "handrail.engine.results",
    "LoopPosition": "handrail.engine.results",
    "LoopView": "handrail.engine.results",
    "MissingContext": "handrail.engine.results",
    "NextResult": "handrail.engine.results",
    "StepView": "handrail.engine.results",
    "Verdict": "handrail.engine.results",
}

if TYPE_CHECKING:
    from handrail.catalog import Catalog, load_catalog
    from handrail.compiler import Compiled, compile_path, compile_text
    from handrail.engine import next_step, validate_output
    from handrail.engine.results import (
        Guidance,
        LoopPosition,
        LoopView,
        MissingContext,
        NextResult,
        StepView,
        Verdict,
    )


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'handrail' has no attribute {name!r}")


__all__ = [
    "Catalog",
    "Compiled",
    "Guidance",
    "LoopPosition",
    "LoopView",
    "MissingContext",
    "NextResult",
    "StepView",
    "Verdict",
    "__version__",
    "compile_path",
    "compile_text",
    "load_catalog",
    "next_step",
    "validate_output",
]
