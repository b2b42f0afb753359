"""Patterns in JSON Schemas: fastjsonschema compiles them with `re`; `harden` swaps
them for the linear-time engines (see handrail.internals for the validator's globals)."""

from __future__ import annotations

import re
from collections.abc import Callable, MutableMapping
from typing import Any, Literal

from handrail.internals import is_format_pattern
from handrail.patterns.compiled import Regex, compile_pattern


def harden(patterns: MutableMapping[str, Any]) -> list[tuple[str, str]]:
    """Swap the compiled `re` patterns of a fastjsonschema validator (its REGEX_PATTERNS)
    for linear-time ones, in place. Returns (pattern, reason) for those that fall back."""
    fallbacks: list[tuple[str, str]] = []
    for name, compiled in list(patterns.items()):
        if not isinstance(compiled, re.Pattern):
            continue
        # `pattern` and patternProperties call .search; formats call .match
        anchored = is_format_pattern(name)
        hardened = compile_pattern(compiled.pattern, compiled.flags, anchored=anchored)
        patterns[name] = _Matcher(hardened)
        if hardened.fallback is not None:
            fallbacks.append((name, hardened.fallback))
    return fallbacks


class _Matcher:
    """What fastjsonschema's generated code calls: `.search(text)` and `.match(text)`."""

    __slots__ = ("match", "pattern", "search")

    def __init__(self, compiled: Regex) -> None:
        self.pattern = compiled.pattern
        self.search: Callable[[str], Literal[True] | None] = compiled.search
        # only formats call .match, and their patterns are compiled anchored
        self.match: Callable[[str], Literal[True] | None] = compiled.match
