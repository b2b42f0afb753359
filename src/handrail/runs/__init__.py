"""Runs: the server holds a run's progress and advances it only on output that
passes the step's rules. See spec/runs.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from handrail.runs.core import Runs

__all__ = ["Runs"]


def __getattr__(name: str) -> Any:
    # loaded on first use: the gate's hook imports runs.gate on every tool call, not Runs
    if name == "Runs":
        from handrail.runs.core import Runs  # lazy: a hook loads only the run modules it uses

        return Runs
    raise AttributeError(f"module 'handrail.runs' has no attribute {name!r}")
