"""The stdio transport: one JSON-RPC message per line in, one per line out.

Only protocol messages reach stdout; anything else that tries to print while
serving is sent to stderr.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import BinaryIO, cast

from handrail.limits import MAX_LINE_BYTES
from handrail.protocol import INTERNAL_ERROR, INVALID_REQUEST, Protocol, _error, encode

DEFAULT_MAX_LINE = MAX_LINE_BYTES
CHUNK = 1 << 16
log = logging.getLogger("handrail.stdio")


class _Stop(Exception):
    pass


def serve(
    protocol: Protocol,
    stdin: io.BufferedIOBase | None = None,
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
    # stdin's buffer is a BufferedReader (typeshed says BinaryIO): read1 is what is needed
    source = stdin if stdin is not None else cast(io.BufferedIOBase, sys.stdin.buffer)
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
    protocol.sink = send  # log records for the client (logging/setLevel)

    def write(data: bytes) -> None:
        """Into the buffer only: what one read brought in is answered, then flushed once."""
        with writing:
            sink.write(data + b"\n")

    def flush() -> None:
        with writing:
            sink.flush()

    too_long = encode(
        _error(
            None,
            INVALID_REQUEST,
            "Invalid Request",
            {"details": f"line longer than {max_line} bytes", "limit": "maxLineBytes", "value": max_line},
        )
    )

    def answer(line: bytes) -> bool:
        """Answer one line (without its newline); True when the server must stop now."""
        nonlocal after_first_reply
        if len(line) > max_line:
            write(too_long)
        elif line.strip():
            reply = _handle(protocol, line)
            if reply is not None:
                write(reply)
                if after_first_reply is not None:
                    flush()  # the first answer goes out before the workflows are compiled
                    after_first_reply()
                    after_first_reply = None
            for note in protocol.list_changed():
                write(note)
            for request in protocol.client_requests.take_outgoing():  # e.g. roots/list
                write(encode(request))
            if protocol.shutdown_requested:
                return True
        return stop_requested

    # Lines are read in whatever chunks the pipe delivers: a client that sends requests
    # without waiting gets its answers in as few writes as it sent them (benchmarks).
    pending = bytearray()  # the start of a line whose end has not arrived yet
    dropping = False  # inside a line over the limit, already refused: skip to its end
    try:
        while True:
            chunk = source.read1(CHUNK)
            busy = True
            if not chunk:
                if pending and not dropping:  # a last line without its newline
                    answer(bytes(pending))
                flush()
                return 0
            at = 0
            while (end := chunk.find(b"\n", at)) != -1:
                piece, at = chunk[at:end], end + 1
                if dropping:
                    dropping = False
                    continue
                if pending:
                    pending += piece
                    piece = bytes(pending)
                    pending.clear()
                if answer(piece):
                    flush()
                    return 0
            if not dropping:
                pending += chunk[at:]
                if len(pending) > max_line:  # refused now, not when its end arrives
                    pending.clear()
                    dropping = True
                    write(too_long)
            flush()
            busy = False
            if stop_requested:
                return 0
    except _Stop:
        return 0
    except (BrokenPipeError, KeyboardInterrupt):
        return 0
    finally:
        protocol.close()


def _handle(protocol: Protocol, line: bytes) -> bytes | None:
    """`protocol.handle`, which answers every failure itself; should anything still
    escape it, the client gets an error without details and the server stays up."""
    try:
        return protocol.handle(line)
    except Exception:
        error_id = os.urandom(6).hex()
        log.exception("internal error %s while handling a line", error_id)
        return encode(_error(None, INTERNAL_ERROR, "Internal error", {"errorId": error_id}))
