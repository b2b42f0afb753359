"""The stdio transport: one JSON-RPC message per line in, one per line out.

Only protocol messages reach stdout; anything else that tries to print while
serving is sent to stderr.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import BinaryIO

from handrail.limits import MAX_LINE_BYTES
from handrail.protocol import INTERNAL_ERROR, INVALID_REQUEST, Protocol, _error, encode

DEFAULT_MAX_LINE = MAX_LINE_BYTES
log = logging.getLogger("handrail.stdio")


class _Stop(Exception):
    pass


def serve(
    protocol: Protocol,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    *,
    max_line: int | None = None,
    after_first_reply: Callable[[], None] | None = None,
) -> int:
    """Serve until end of input, `shutdown` or a signal. `after_first_reply` runs once the
    first answer is out: the server compiles its workflows then, off the start-up path.
    `max_line` defaults to the service's `Limits.max_line_bytes`."""
    if max_line is None:
        limits = getattr(protocol.service, "limits", None)
        max_line = limits.max_line_bytes if limits is not None else DEFAULT_MAX_LINE
    source = stdin or sys.stdin.buffer
    sink = stdout or sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol stream
    busy = False
    stop_requested = False

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal stop_requested
        if busy:
            stop_requested = True  # finish the message in hand, then leave
        else:
            raise _Stop

    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(ValueError):  # not the main thread (tests): signals stay
            signal.signal(sig, on_signal)

    writing = threading.Lock()  # the catalog watcher sends notifications from its own thread

    def send(data: bytes) -> None:
        with writing:
            sink.write(data + b"\n")
            sink.flush()

    def on_change(snapshot: object) -> None:
        for note in protocol.list_changed():
            with contextlib.suppress(OSError, ValueError):
                send(note)

    protocol.service.catalog.on_change(on_change)

    try:
        while True:
            line = source.readline(max_line + 1)
            if not line:
                return 0
            busy = True
            if len(line) > max_line and not line.endswith(b"\n"):
                while True:  # drop the rest of the oversized line
                    rest = source.readline(max_line)
                    if not rest or rest.endswith(b"\n"):
                        break
                send(
                    encode(
                        _error(
                            None,
                            INVALID_REQUEST,
                            "Invalid Request",
                            {
                                "details": f"line longer than {max_line} bytes",
                                "limit": "maxLineBytes",
                                "value": max_line,
                            },
                        )
                    )
                )
            elif line.strip():
                reply = _handle(protocol, line)
                if reply is not None:
                    send(reply)
                    if after_first_reply is not None:
                        after_first_reply()
                        after_first_reply = None
                for note in protocol.list_changed():
                    send(note)
                for request in protocol.client_requests.take_outgoing():  # e.g. roots/list
                    send(encode(request))
                if protocol.shutdown_requested:
                    return 0
            busy = False
            if stop_requested:
                return 0
    except _Stop:
        return 0
    except (BrokenPipeError, KeyboardInterrupt):
        return 0


def _handle(protocol: Protocol, line: bytes) -> bytes | None:
    """`protocol.handle`, which answers every failure itself; should anything still
    escape it, the client gets an error without details and the server stays up."""
    try:
        return protocol.handle(line)
    except Exception:
        error_id = os.urandom(6).hex()
        log.exception("internal error %s while handling a line", error_id)
        return encode(_error(None, INTERNAL_ERROR, "Internal error", {"errorId": error_id}))
