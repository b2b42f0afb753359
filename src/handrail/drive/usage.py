"""What one agent process spent, as its harness reported it: the same fields whichever
harness it was, recorded on the run as a `usage` event."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Usage:
    """What one agent process spent, as its harness reported it."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost_usd: float = 0.0
    turns: int = 0
    session: str | None = None
    reported: bool = False  # False: the harness printed no result (killed, crashed)

    def as_event(self) -> dict[str, Any]:
        return {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "cacheCreationTokens": self.cache_creation_tokens,
            "costUsd": self.cost_usd,
            "turns": self.turns,
            **({"session": self.session} if self.session else {}),
            "reported": self.reported,
        }


def count(value: Any) -> int:
    """A token count as a harness printed it: a whole number of 0 or more, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
