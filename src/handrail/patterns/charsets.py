"""Python's character classes, exactly: the code points its Unicode `\\w`, `\\d` and
`\\s` match, as sorted ranges, and the set operations the translation needs on them
(handrail.patterns.translate writes them out for RE2, which has only ASCII ones)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from functools import cache, lru_cache

MAX_CODE_POINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)

Ranges = tuple[tuple[int, int], ...]

# Python's \w, \d and \s hold no character above U+3FFFF (planes 4 to 13 are
# unassigned; 14 holds format characters and variation selectors, 15 and 16 private
# use), so the scan stops there; a test checks this against a scan of every plane.
_SCAN_END = 0x40000


def category(name: str) -> Ranges:
    """The code points Python's `\\w`, `\\d` or `\\s` (Unicode) match, as sorted ranges."""
    return _tables()[name]


@cache
def _tables() -> dict[str, Ranges]:
    text = _code_points(_SCAN_END)  # built once for the three (about 30 ms in all)
    return {name: _runs(pattern, text) for name, pattern in CLASSES.items()}


CLASSES = {"w": r"\w+", "d": r"\d+", "s": r"\s+"}


def scan(pattern: str, end: int) -> Ranges:
    return _runs(pattern, _code_points(end))


def _code_points(end: int) -> str:
    """Every code point below `end` but the surrogates, in order."""
    import array  # lazy: only building the tables needs it
    import sys  # lazy: only building the tables needs it

    points = array.array("I", range(SURROGATES[0]))
    points.extend(range(SURROGATES[1] + 1, end))
    return points.tobytes().decode("utf-32-le" if sys.byteorder == "little" else "utf-32-be")


def _runs(pattern: str, text: str) -> Ranges:
    gap = SURROGATES[1] - SURROGATES[0] + 1
    out: list[tuple[int, int]] = []
    for found in re.finditer(pattern, text):
        first, last = found.start(), found.end() - 1
        lo = first if first < SURROGATES[0] else first + gap
        hi = last if last < SURROGATES[0] else last + gap
        if lo < SURROGATES[0] < hi:
            out.extend(((lo, SURROGATES[0] - 1), (SURROGATES[1] + 1, hi)))
        else:
            out.append((lo, hi))
    return tuple(out)


ASCII_CATEGORIES: dict[str, Ranges] = {
    "w": ((48, 57), (65, 90), (95, 95), (97, 122)),
    "d": ((48, 57),),
    "s": ((9, 13), (32, 32)),
}


def union(*sets: Iterable[tuple[int, int]]) -> Ranges:
    items = sorted(r for s in sets for r in s)
    out: list[tuple[int, int]] = []
    for lo, hi in items:
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def complement(ranges: Ranges) -> Ranges:
    """Every code point not in `ranges`, surrogates left out (no text that reaches RE2
    holds one; see `Regex.search`)."""
    out: list[tuple[int, int]] = []
    start = 0
    for lo, hi in ranges:
        if lo > start:
            out.append((start, lo - 1))
        start = max(start, hi + 1)
    if start <= MAX_CODE_POINT:
        out.append((start, MAX_CODE_POINT))
    return without_surrogates(out)


def without_surrogates(ranges: Iterable[tuple[int, int]]) -> Ranges:
    out: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if hi < SURROGATES[0] or lo > SURROGATES[1]:
            out.append((lo, hi))
            continue
        if lo < SURROGATES[0]:
            out.append((lo, SURROGATES[0] - 1))
        if hi > SURROGATES[1]:
            out.append((SURROGATES[1] + 1, hi))
    return tuple(out)


@lru_cache(maxsize=8)
def _starts(ranges: Ranges) -> list[int]:
    return [lo for lo, _ in ranges]


def word_kinds(ranges: Ranges, words: Ranges) -> frozenset[str]:
    """Whether the characters of `ranges` are word characters ("w"), others ("n"), or both."""
    starts = _starts(words)
    kinds: set[str] = set()
    for lo, hi in ranges:
        i = bisect.bisect_right(starts, lo) - 1
        inside = i >= 0 and words[i][0] <= lo and hi <= words[i][1]
        if inside:
            kinds.add("w")
            continue
        # not wholly inside one word range: is any of it a word character?
        j = bisect.bisect_right(starts, hi) - 1
        touches = any(max(lo, wlo) <= min(hi, whi) for wlo, whi in words[max(i, 0) : j + 1])
        kinds.add("n")
        if touches:
            kinds.add("w")
    return frozenset(kinds)
