"""Runs: the server holds a run's progress and advances it only on output that
passes the step's rules. See spec/runs.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from handrail.lazy import lazy_attributes

if TYPE_CHECKING:
    from handrail.runs.core import Runs

__all__ = ["Runs"]


# loaded on first use: the gate's hook imports runs.gate on every tool call, not Runs
__getattr__ = lazy_attributes("handrail.runs", {"Runs": "handrail.runs.core"})
