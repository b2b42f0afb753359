"""The engine's answers in their wire form, as a client reads them from the tools.

Tests that pin the JSON shapes call these; tests of the typed results call the
engine (`handrail.engine`) directly.
"""

from __future__ import annotations

from typing import Any

from handrail.engine import next_step, validate_output
from handrail.engine.result_json import next_json, verdict_json


def wire_next(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """`next_step(...)` as workflow_next answers it."""
    return next_json(next_step(*args, **kwargs))


def wire_validate(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """`validate_output(...)` as workflow_validate answers it."""
    return verdict_json(validate_output(*args, **kwargs))
