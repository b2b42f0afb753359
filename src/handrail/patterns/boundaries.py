"""Word boundaries: whether the characters a part of a pattern can start or end with
are word characters. Where that is certain on both sides of a `\\b`, translate.py
writes the boundary without `\\b`, so RE2's ASCII one never stands for Python's.
Also where boundaries stand beside anchors, which matters where Python's boundaries
are marked in the text (see `Regex.search`)."""

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


_BOUNDARIES = (_C.AT_BOUNDARY, _C.AT_NON_BOUNDARY)
_STARTS = (_C.AT_BEGINNING, _C.AT_BEGINNING_STRING)
_ENDS = (_C.AT_END, _C.AT_END_STRING)
_AT_ORDER = {**dict.fromkeys(_STARTS, 0), **dict.fromkeys(_BOUNDARIES, 1), **dict.fromkeys(_ENDS, 2)}


def anchors_in_order(items: Sequence[Any]) -> Sequence[Any]:
    """Assertions side by side test one position, so their order is free (`\\b^` is
    `^\\b`) and a repeated one adds nothing (`\\b\\b` is `\\b`): each run of them is
    written once each, start anchors first, then word boundaries, then end anchors. That
    is the order a text with its word boundaries marked has: a mark lies after the start
    of a line and before its end, and is matched once."""
    if not any(op is _C.AT and av in _BOUNDARIES for op, av in items):
        return items
    ordered = list(items)
    start = 0
    while start < len(ordered):
        end = start
        while end < len(ordered) and ordered[end][0] is _C.AT and ordered[end][1] in _AT_ORDER:
            end += 1
        run = sorted(dict.fromkeys(ordered[start:end]), key=lambda item: _AT_ORDER[item[1]])
        ordered[start:end] = run
        end = start + len(run)
        start = end + 1
    return ordered


# Since the last character: (a word boundary was passed, an end anchor was passed)
_Since = frozenset[tuple[bool, bool]]
_NOTHING: _Since = frozenset({(False, False)})


def anchor_beside_boundary(items: Sequence[Any]) -> bool:
    """Whether, with no character between them, a word boundary can follow an end
    anchor or another boundary, or a start anchor a boundary, other than side by side
    (which `anchors_in_order` puts right): `\\b(^)`, `($)\\b`, `\\ba*\\b`."""
    try:
        _flow(items, _NOTHING)
    except _Beside:
        return True
    return False


class _Beside(Exception):
    pass


def _flow(items: Sequence[Any], since: _Since) -> _Since:
    for op, av in anchors_in_order(items):
        if op is _C.AT:
            if av in _BOUNDARIES:
                if any(boundary or end for boundary, end in since):
                    raise _Beside  # a second boundary would want the same mark
                since = frozenset((True, end) for _, end in since)
            elif av in _STARTS:
                if any(boundary for boundary, _ in since):
                    raise _Beside
            elif av in _ENDS:
                since = frozenset((boundary, True) for boundary, _ in since)
        elif op is _C.SUBPATTERN:
            since = _flow(av[3], since)
        elif op is _C.BRANCH:
            since = frozenset().union(*(_flow(alternative, since) for alternative in av[1]))
        elif op in (_C.MAX_REPEAT, _C.MIN_REPEAT, _C.POSSESSIVE_REPEAT):
            lo, hi, sub = av
            if hi == 0:
                continue
            once = _flow(sub, since)
            again = _flow(sub, once) if hi > 1 else once  # the way round the loop
            since = once | again | (since if lo == 0 else frozenset())
        elif op in (_C.ASSERT, _C.ASSERT_NOT):
            continue  # takes no character (and RE2 refuses it anyway)
        else:
            since = _NOTHING  # a character was taken
    return since
