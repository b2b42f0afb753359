"""Did-you-mean suggestions for an unknown workflow id, fast over many ids.

`difflib.get_close_matches` compares the word with every id: 0.2-0.4 s over 10,000
ids, paid by every request that names an unknown one. Over a large catalog, the ids
sharing the most three-letter pieces with the word are shortlisted first (an index
built once per catalog snapshot), and difflib ranks only those. Small catalogs keep
difflib over every id, so their suggestions are exactly difflib's.
"""

from __future__ import annotations

import difflib
import threading
from collections import Counter
from collections.abc import Collection

EXACT_UP_TO = 2000  # ids; up to this many, every id is compared
SHORTLIST = 200  # ids difflib ranks over a larger catalog


def _pieces(word: str) -> set[str]:
    padded = f"\x02{word}\x03"
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


class _Index:
    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.postings: dict[str, list[int]] = {}
        for number, name in enumerate(names):
            for piece in _pieces(name):
                self.postings.setdefault(piece, []).append(number)

    def shortlist(self, word: str) -> list[str]:
        counts: Counter[int] = Counter()
        for piece in _pieces(word):
            counts.update(self.postings.get(piece, ()))
        return [self.names[number] for number, _ in counts.most_common(SHORTLIST)]


_lock = threading.Lock()
_cached: tuple[Collection[str], _Index] | None = None  # the last catalog's ids (snapshots never change)


def prepare(names: Collection[str]) -> _Index | None:
    """The index of a large catalog's ids (built once; the catalog's watcher builds it
    ahead, so no request waits for it). None for a small catalog."""
    global _cached
    if len(names) <= EXACT_UP_TO:
        return None
    cached = _cached
    if cached is None or cached[0] is not names:
        with _lock:
            cached = _cached
            if cached is None or cached[0] is not names:
                cached = _cached = (names, _Index(list(names)))
    return cached[1]


def close_matches(word: str, names: Collection[str], n: int = 3, cutoff: float = 0.5) -> list[str]:
    """Up to `n` of `names` close to `word`, best first (as difflib.get_close_matches)."""
    index = prepare(names)
    candidates = list(names) if index is None else index.shortlist(word)
    return difflib.get_close_matches(word, candidates, n=n, cutoff=cutoff)
