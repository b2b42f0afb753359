"""Regular expressions as workflow files write them: JavaScript-style flags, Python syntax.

Every regex in a workflow (validation rules and the `matches` operator) is compiled
here, once, at load time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "u": 0, "g": 0, "y": 0}


@dataclass(frozen=True, slots=True)
class PatternError(Exception):
    message: str
    offset: int | None = None  # position inside the pattern, 0-based

    def __str__(self) -> str:
        return self.message


def flag_bits(flags: str) -> int:
    bits = 0
    for ch in flags:
        if ch not in _FLAGS:
            raise PatternError(f"unknown regex flag {ch!r} (use i, m, s, u; g and y are ignored)")
        bits |= _FLAGS[ch]
    if len(set(flags)) != len(flags):
        raise PatternError(f"regex flag repeated in {flags!r}")
    return bits


_cache: dict[tuple[str, str], re.Pattern[str]] = {}


def compile_pattern(pattern: str, flags: str = "") -> re.Pattern[str]:
    """Compile once; identical (pattern, flags) pairs share one compiled object."""
    key = (pattern, flags)
    found = _cache.get(key)
    if found is not None:
        return found
    bits = flag_bits(flags)
    try:
        compiled = re.compile(pattern, bits)
    except re.error as exc:
        raise PatternError(exc.msg, exc.pos) from None
    _cache[key] = compiled
    return compiled
