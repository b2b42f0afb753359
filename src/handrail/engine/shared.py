"""What is the same on every call for a compiled step, made once: the view of a step
whose texts hold no template and whose confirmation is no condition (or one view per
outcome of a confirmation condition), and the guidance
composed for it outside loops. A bounded table keyed by the step's identity; each
entry holds its step, so no other object can take that identity while it is kept.

`shared(value)` tells `result_json` that a value comes from here, so that its JSON is
worth making once too (benchmarks: a tenth of a workflow_next call).
"""

from __future__ import annotations

from typing import Any

from handrail.model import Step

LIMIT = 1024  # entries; reloads leave old steps behind, so the table starts again when full
_made: dict[tuple[int, Any], tuple[Step, Any]] = {}
_shared: set[int] = set()  # ids of the values in `_made`, alive while they are held there


def made(step: Step, key: Any) -> Any:
    """The value kept for (`step`, `key`), else None."""
    found = _made.get((id(step), key))
    return found[1] if found is not None and found[0] is step else None


def keep(step: Step, key: Any, value: Any) -> None:
    if len(_made) >= LIMIT:
        _made.clear()
        _shared.clear()
    _made[(id(step), key)] = (step, value)
    _shared.add(id(value))


def shared(value: Any) -> bool:
    """Whether `value` is one kept here (the same object on every call)."""
    return id(value) in _shared
