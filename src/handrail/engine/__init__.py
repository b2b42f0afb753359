"""The engine: pure functions over compiled workflows (no I/O, no protocol).

`next_step` returns a `NextResult`, `validate_output` a `Verdict` (engine/results.py);
`handrail.engine.result_json` gives their wire form, as the tools answer.

The names below are imported on first use: a module that needs only the result types
(the run layer reads a `LoopPosition` from a stored run) loads neither the walk nor the
conditions it evaluates, so that `handrail start` answers `initialize` without them.
"""

from typing import TYPE_CHECKING

from handrail.lazy import lazy_attributes

if TYPE_CHECKING:  # the same names for type checkers, each re-exported as itself
    from handrail.engine.next import next_step as next_step
    from handrail.engine.results import Guidance as Guidance
    from handrail.engine.results import LoopPosition as LoopPosition
    from handrail.engine.results import LoopView as LoopView
    from handrail.engine.results import MissingContext as MissingContext
    from handrail.engine.results import NextResult as NextResult
    from handrail.engine.results import StepView as StepView
    from handrail.engine.results import Verdict as Verdict
    from handrail.engine.validate import validate_output as validate_output

_RESULTS = ("Guidance", "LoopPosition", "LoopView", "MissingContext", "NextResult", "StepView", "Verdict")
_HOMES = {
    "next_step": "handrail.engine.next",
    "validate_output": "handrail.engine.validate",
    **dict.fromkeys(_RESULTS, "handrail.engine.results"),
}

__all__ = sorted(_HOMES)

__getattr__ = lazy_attributes("handrail.engine", _HOMES)
