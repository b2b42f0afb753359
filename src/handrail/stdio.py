"""The stdio transport: one JSON-RPC message per line in, one per line out.

Only protocol messages reach stdout; anything else that tries to print while
serving is sent to stderr.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import BinaryIO, cast

from handrail.errors import error_response
from handrail.limits import MAX_LINE_BYTES, SHUTDOWN_TIMEOUT_S
from handrail.protocol import INTERNAL_ERROR, INVALID_REQUEST, Protocol, encode

DEFAULT_MAX_LINE = MAX_LINE_BYTES
CHUNK = 1 << 16
QUEUED_LINES = 8  # read ahead at most this many lines (each at most max_line bytes)
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
    shutdown_timeout: float = SHUTDOWN_TIMEOUT_S,
) -> int:
    """Serve until end of input, `shutdown` or a signal. `after_first_reply` runs once the
    first answer is out: the server compiles its workflows then, off the start-up path.
    `max_line` defaults to the service's `Limits.max_line_bytes`.

    Lines are read on one thread and answered, in order, on another; the calling thread
    only waits. So a signal or the end of input is noticed even while a request runs:
    the request in hand gets `shutdown_timeout` seconds to finish, then the server
    leaves without it (its threads are daemons). At the end of input, the lines the
    client sent before it are all answered first; the last one gets the grace period."""
    if max_line is None:
        limits = getattr(protocol.service, "limits", None)
        max_line = limits.max_line_bytes if limits is not None else DEFAULT_MAX_LINE
    source = cast(io.BufferedIOBase, stdin or _standard_input())  # read1: what the pipe has
    sink = stdout or sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol stream
    lines: queue.Queue[bytes | None] = queue.Queue(maxsize=QUEUED_LINES)
    ended = threading.Event()  # no more input
    finished = threading.Event()  # the answering thread is done: shutdown, end of input, broken pipe
    stopping = threading.Event()  # take no further line
    working = threading.Event()  # a line is in hand
    # lines put in the queue / taken from it: at the end of input, the lines the client
    # sent before closing are all answered; the grace period is for the last one only
    counts = {"read": 0, "taken": 0}

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.set()
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
    requests = protocol.client_requests
    requests.sender = send  # elicitation/create, sent while a request is answered
    limit = max_line

    def queue_line(line: bytes) -> None:
        counts["read"] += 1  # counted first: the main thread never sees it taken before read
        lines.put(line)

    def read() -> None:
        """Split what the pipe delivers into lines, in whatever chunks it comes: a client
        that sends requests without waiting gets its answers in as few writes (benchmarks)."""
        pending = bytearray()  # the start of a line whose end has not arrived yet
        dropping = False  # inside a line over the limit, already refused: skip to its end
        try:
            while not stopping.is_set():
                chunk = source.read1(CHUNK)
                if not chunk:
                    if pending and not dropping:  # a last line without its newline
                        queue_line(bytes(pending))
                    break
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
                    if requests.waiting and requests.route(piece):
                        continue  # the answer the request in hand waits for (elicitation)
                    queue_line(_OVERSIZED if len(piece) > limit else piece)
                if not dropping:
                    pending += chunk[at:]
                    if len(pending) > limit:  # refused now, not when its end arrives
                        pending.clear()
                        dropping = True
                        queue_line(_OVERSIZED)
        except (OSError, ValueError):  # input closed under us
            pass
        finally:
            ended.set()
            lines.put(None)

    def write(data: bytes) -> None:
        """Into the buffer only: flushed once nothing more is waiting to be answered."""
        with writing:
            sink.write(data + b"\n")

    def flush() -> None:
        with writing:
            sink.flush()

    def answer() -> None:
        nonlocal after_first_reply
        try:
            while not stopping.is_set():
                if lines.empty():
                    flush()
                line = lines.get()
                if line is None:
                    return
                counts["taken"] += 1
                working.set()
                if line is _OVERSIZED:
                    write(encode(_too_long(limit)))
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
                        return
                working.clear()
        except (OSError, ValueError):  # stdout closed (BrokenPipeError) or unusable
            return
        finally:
            with contextlib.suppress(OSError, ValueError):
                flush()
            finished.set()

    for target, name in ((read, "handrail-stdin"), (answer, "handrail-answer")):
        threading.Thread(target=target, name=name, daemon=True).start()
    try:
        while not finished.wait(0.05):
            if ended.is_set() and counts["taken"] == counts["read"]:
                # no more input, and the last line is in hand: it may still finish, briefly
                finished.wait(shutdown_timeout)
                break
    except (_Stop, KeyboardInterrupt):
        stopping.set()
        protocol.interrupt()  # a check's processes die now; a wait for the client ends
        if working.is_set():  # finish the message in hand, if it is quick enough
            with contextlib.suppress(_Stop, KeyboardInterrupt):
                finished.wait(shutdown_timeout)
        else:
            protocol.close()
            return 0
    if not finished.is_set():
        log.warning("stopping with a request still running after %gs", shutdown_timeout)
        protocol.interrupt()
    protocol.close()
    return 0


_OVERSIZED = b"\x00oversized"  # a marker, never a line: a read line is never this object


def _too_long(max_line: int) -> dict[str, object]:
    return error_response(
        None,
        INVALID_REQUEST,
        "Invalid Request",
        {"details": f"line longer than {max_line} bytes", "limit": "maxLineBytes", "value": max_line},
    )


def _standard_input() -> BinaryIO:
    """Standard input, through a reader of our own: the reading thread may still be
    blocked in it when the server leaves, and the interpreter, shutting down, must not
    wait for the lock of `sys.stdin.buffer`."""
    try:
        return open(sys.stdin.fileno(), "rb", closefd=False)
    except (AttributeError, OSError, ValueError):
        return sys.stdin.buffer


def _handle(protocol: Protocol, line: bytes) -> bytes | None:
    """`protocol.handle`, which answers every failure itself; should anything still
    escape it, the client gets an error without details and the server stays up."""
    try:
        return protocol.handle(line)
    except Exception:
        error_id = os.urandom(6).hex()
        log.exception("internal error %s while handling a line", error_id)
        return encode(error_response(None, INTERNAL_ERROR, "Internal error", {"errorId": error_id}))
