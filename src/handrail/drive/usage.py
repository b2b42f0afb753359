"""What one agent process spent, as its harness reported it: the same fields whichever
harness it was, recorded on the run as a `usage` event. `input_tokens` is always the
input not read from a cache (Anthropic's counting; OpenAI's and Gemini's totals have
their cached part taken out), so that a price applies to each count once."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

MILLION = 1_000_000


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
    priced: bool = False  # True: cost_usd is --price applied to the counts, not the harness's figure

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
            **({"priced": True} if self.priced else {}),
        }


@dataclass(frozen=True, slots=True)
class Price:
    """What a million tokens cost (`--price`), for a harness whose report gives the
    counts and no price: Codex and Gemini CLI."""

    input_usd: float
    output_usd: float
    cached_usd: float | None = None  # input read from a cache; None: the input price

    def of(self, used: Usage) -> Usage:
        """`used` with its cost from the counts, unless the harness gave one (its own
        figure stands) or reported nothing."""
        if used.cost_usd > 0 or not used.reported:
            return used
        cached = self.input_usd if self.cached_usd is None else self.cached_usd
        fresh = used.input_tokens + used.cache_creation_tokens
        usd = fresh * self.input_usd + used.output_tokens * self.output_usd + used.cache_read_tokens * cached
        return replace(used, cost_usd=usd / MILLION, priced=True)


def price_of(text: str) -> Price:
    """`IN,OUT[,CACHED]`, dollars per million tokens, each 0 or more."""
    parts = text.split(",")
    try:
        values = [float(part) for part in parts]
    except ValueError:
        values = []
    if len(values) not in (2, 3) or any(not 0 <= v < float("inf") for v in values):
        raise ValueError(
            f"{text!r} is not a price: give dollars per million tokens as IN,OUT or IN,OUT,CACHED "
            "(for example 1.25,10,0.125)"
        )
    return Price(*values)


def count(value: Any) -> int:
    """A token count as a harness printed it: a whole number of 0 or more, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
