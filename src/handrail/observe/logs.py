"""`Log`: a named logger that imports `logging` when it first logs, and the one
configuration a server's log takes, applied then. `logging` loads `traceback`,
`linecache`, `tokenize` and `string` (about 7 ms), which `handrail start` must not pay
before its first answer; a server that logs nothing then loads it right after
(`settle`), so that the log of any other module is configured as well."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

_pending: list[Callable[[], None]] = []  # the configuration not applied yet (at most one)


def configure(apply: Callable[[], None]) -> None:
    """Apply `apply` (which imports `logging` itself) before the first record, or at
    `settle`, whichever comes first; at once where `logging` is loaded already (a record
    made now must find it configured, and waiting saves nothing)."""
    if "logging" in sys.modules:
        _pending.clear()
        apply()
        return
    _pending[:] = [apply]


def settle() -> None:
    """Apply the configuration now, if it is still waiting."""
    while _pending:
        _pending.pop()()


class Log:
    """`logging.getLogger(name)` on first use; the methods the working layers call."""

    __slots__ = ("_logger", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: logging.Logger | None = None

    def logger(self) -> logging.Logger:
        if self._logger is None:
            import logging  # lazy: see the module's docstring

            settle()
            self._logger = logging.getLogger(self.name)
        return self._logger

    # stacklevel=2: a record names the caller of these methods, not this module
    def info(self, message: str, *args: Any) -> None:
        self.logger().info(message, *args, stacklevel=2)

    def warning(self, message: str, *args: Any) -> None:
        self.logger().warning(message, *args, stacklevel=2)

    def exception(self, message: str, *args: Any) -> None:
        self.logger().exception(message, *args, stacklevel=2)
