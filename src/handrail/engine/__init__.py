"""The engine: pure functions over compiled workflows (no I/O, no protocol)."""

from handrail.engine.next import next_step
from handrail.engine.validate import validate_output

__all__ = ["next_step", "validate_output"]
