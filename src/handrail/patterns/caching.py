"""Caches of compiled things, each bounded, and none filled by what a client sends.

Workflow files share compiled regexes and schema validators through these caches.
A workflow a client sends (`workflow_validate_json`) is compiled inside
`transient()`: it may read the caches but adds nothing to them, so a stream of new
schemas or patterns cannot grow the server. Every cache also has a size bound and
forgets its least recently used entry past it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from threading import Lock
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_transient: ContextVar[bool] = ContextVar("handrail_transient", default=False)


@contextmanager
def transient() -> Iterator[None]:
    """Compile without caching anything (for documents a client sends)."""
    token = _transient.set(True)
    try:
        yield
    finally:
        _transient.reset(token)


class BoundedCache(Generic[K, V]):
    """A least-recently-used map of at most `size` entries, safe across threads."""

    __slots__ = ("_items", "_lock", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> None:
        if _transient.get():
            return
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
