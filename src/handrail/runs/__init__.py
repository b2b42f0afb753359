"""Runs: the server holds a run's progress and advances it only on output that
passes the step's rules. See spec/runs.md."""

from handrail.runs.core import Runs

__all__ = ["Runs"]
