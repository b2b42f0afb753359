"""`logging/setLevel` and `notifications/message`: the server's own log records, at or
above the level the client chose, sent to the client as well as to stderr.

Nothing is sent before the client sets a level (the spec leaves the default to the
server; unasked-for lines would only be noise). Only the record's message goes out,
never a traceback: those may hold what a client should not see, and stay on stderr.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

# RFC 5424 severities, as MCP names them, in increasing order.
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
# The Python level each MCP level admits from (notice has no Python level: it is between).
_PYTHON_LEVEL = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO + 5,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL + 5,
    "emergency": logging.CRITICAL + 10,
}
ROOT_LOGGER = "handrail"


def mcp_level(levelno: int) -> str:
    """The MCP name of a Python level: the highest MCP level it reaches."""
    name = "debug"
    for candidate in LEVELS:
        if levelno >= _PYTHON_LEVEL[candidate]:
            name = candidate
    return name


def python_level(name: str) -> int:
    return _PYTHON_LEVEL[name]


class _Sending(threading.local):
    """Whether this thread is sending a record already."""

    busy = False

    def begin(self) -> bool:
        """Mark this thread as sending; False when it was already."""
        if self.busy:
            return False
        self.busy = True
        return True

    def end(self) -> None:
        self.busy = False


class LogBridge(logging.Handler):
    """One client's log stream: installed on the `handrail` logger when the client first
    sets a level, removed with `close()`. `send(params)` delivers one notification."""

    def __init__(self, send: Callable[[dict[str, Any]], None]) -> None:
        super().__init__(logging.NOTSET)
        self._send = send
        self._local = _Sending()  # a record logged while sending one is not sent
        self._installed = False

    def set_level(self, name: str) -> None:
        threshold = python_level(name)
        self.setLevel(threshold)
        logger = logging.getLogger(ROOT_LOGGER)
        if not self._installed:
            _pin_stderr_handlers()
            logger.addHandler(self)
            self._installed = True
        if logger.getEffectiveLevel() > threshold:
            logger.setLevel(threshold)  # let the records be made; stderr's handlers keep their level

    def emit(self, record: logging.LogRecord) -> None:
        if not self._local.begin():
            return
        try:
            self._send(
                {"level": mcp_level(record.levelno), "logger": record.name, "data": record.getMessage()}
            )
        except Exception:  # a closed pipe, a bad format string: never the caller's problem
            pass
        finally:
            self._local.end()

    def close(self) -> None:
        if self._installed:
            logging.getLogger(ROOT_LOGGER).removeHandler(self)
            self._installed = False
        super().close()


def _pin_stderr_handlers() -> None:
    """Give the handlers that take every level the level their logger has now, so that
    lowering the `handrail` logger's level for the client leaves stderr as it was."""
    for name in ("", ROOT_LOGGER):
        logger = logging.getLogger(name)
        level = logger.getEffectiveLevel()
        for handler in logger.handlers:
            if handler.level == logging.NOTSET and not isinstance(handler, LogBridge):
                handler.setLevel(level)
