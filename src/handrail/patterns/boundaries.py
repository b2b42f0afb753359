"""Word boundaries: whether the characters a part of a pattern can start or end with
are word characters. Where that is certain on both sides of a `\\b`, translate.py
writes the boundary without `\\b`, so RE2's ASCII one never stands for Python's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from handrail.internals import sre_constants
from handrail.patterns.charsets import Ranges, category, complement, word_kinds

_C = sre_constants  # Python's own pattern parser: see handrail.internals


def edge(items: Sequence[Any], words: Ranges, *, from_end: bool) -> tuple[frozenset[str], bool]:
    """Whether the characters a sequence can start (or end) with are word characters:
    ({"w"}, {"n"} or both, whether the sequence can match nothing)."""
    kinds: set[str] = set()
    for op, av in reversed(items) if from_end else items:
        found, empty = _edge_node(op, av, words, from_end)
        kinds |= found
        if not empty:
            return frozenset(kinds), False
    return frozenset(kinds), True


_BOTH = frozenset({"w", "n"})


def _edge_node(op: Any, av: Any, words: Ranges, from_end: bool) -> tuple[frozenset[str], bool]:
    if op is _C.LITERAL:
        return word_kinds(((av, av),), words), False
    if op is _C.IN:
        ranges: list[tuple[int, int]] = []
        for item, value in av:
            if item is _C.LITERAL:
                ranges.append((value, value))
            elif item is _C.RANGE:
                ranges.append(value)
            elif item is _C.CATEGORY and value in (_C.CATEGORY_DIGIT, _C.CATEGORY_WORD):
                ranges.extend(words if value is _C.CATEGORY_WORD else category("d"))
            elif item is _C.CATEGORY and value in (_C.CATEGORY_SPACE, _C.CATEGORY_NOT_WORD):
                ranges.extend(category("s") if value is _C.CATEGORY_SPACE else complement(words))
            else:  # a negated class or category: could be either
                return _BOTH, False
        return word_kinds(tuple(ranges), words), False
    if op in (_C.MAX_REPEAT, _C.MIN_REPEAT, _C.POSSESSIVE_REPEAT):
        lo, hi, sub = av
        if hi == 0:
            return frozenset(), True
        found, empty = edge(list(sub), words, from_end=from_end)
        return found, empty or lo == 0
    if op is _C.SUBPATTERN:
        return edge(list(av[3]), words, from_end=from_end)
    if op is _C.BRANCH:
        kinds: set[str] = set()
        any_empty = False
        for alternative in av[1]:
            found, empty = edge(list(alternative), words, from_end=from_end)
            kinds |= found
            any_empty = any_empty or empty
        return frozenset(kinds), any_empty
    if op is _C.AT:
        return frozenset(), True  # takes no character
    return _BOTH, False  # any character, a negated literal, or what RE2 cannot run anyway
