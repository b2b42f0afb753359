"""The engine: pure functions over compiled workflows (no I/O, no protocol).

`next_step` returns a `NextResult`, `validate_output` a `Verdict` (engine/results.py);
`handrail.engine.result_json` gives their wire form, as the tools answer.
"""

from handrail.engine.next import next_step
from handrail.engine.results import (
    Guidance,
    LoopPosition,
    LoopView,
    MissingContext,
    NextResult,
    StepView,
    Verdict,
)
from handrail.engine.validate import validate_output

__all__ = [
    "Guidance",
    "LoopPosition",
    "LoopView",
    "MissingContext",
    "NextResult",
    "StepView",
    "Verdict",
    "next_step",
    "validate_output",
]
