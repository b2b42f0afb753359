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

from typing import TYPE_CHECKING

from handrail.lazy import lazy_attributes
from handrail.model.version import __version__

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

if TYPE_CHECKING:  # the same names for type checkers, each re-exported as itself
    from handrail.catalog import Catalog as Catalog
    from handrail.catalog import load_catalog as load_catalog
    from handrail.compiler import Compiled as Compiled
    from handrail.compiler import compile_path as compile_path
    from handrail.compiler import compile_text as compile_text
    from handrail.engine import Guidance as Guidance
    from handrail.engine import LoopPosition as LoopPosition
    from handrail.engine import LoopView as LoopView
    from handrail.engine import MissingContext as MissingContext
    from handrail.engine import NextResult as NextResult
    from handrail.engine import StepView as StepView
    from handrail.engine import Verdict as Verdict
    from handrail.engine import next_step as next_step
    from handrail.engine import validate_output as validate_output


__getattr__ = lazy_attributes("handrail", _PUBLIC)


__all__ = ["__version__", *_PUBLIC]
