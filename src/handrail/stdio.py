"""The stdio transport: one JSON-RPC message per line in, one per line out.

Only protocol messages reach stdout; anything else that tries to print while
serving is sent to stderr.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import BinaryIO

from handrail.limits import MAX_LINE_BYTES, SHUTDOWN_TIMEOUT_S
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
    shutdown_timeout: float = SHUTDOWN_TIMEOUT_S,
) -> int:
    """Serve until end of input, `shutdown` or a signal. `after_first_reply` runs once the
    first answer is out: the server compiles its workflows then, off the start-up path.
    `max_line` defaults to the service's `Limits.max_line_bytes`.

    Lines are read on one thread and answered, in order, on another; the calling thread
    only waits. So a signal or the end of input is noticed even while a request runs:
    the request in hand gets `shutdown_timeout` seconds to finish, then the server
    leaves without it (its threads are daemons)."""
    if max_line is None:
        limits = getattr(protocol.service, "limits", None)
        max_line = limits.max_line_bytes if limits is not None else DEFAULT_MAX_LINE
    source = stdin or _standard_input()
    sink = stdout or sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol stream
    lines: queue.Queue[bytes | None] = queue.Queue(maxsize=1)  # read ahead by one line at most
    ended = threading.Event()  # no more input
    finished = threading.Event()  # the answering thread is done: shutdown, end of input, broken pipe
    stopping = threading.Event()  # take no further line
    working = threading.Event()  # a line is in hand

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
    limit = max_line

    def read() -> None:
        try:
            while not stopping.is_set():
                line = source.readline(limit + 1)
                if not line:
                    break
                if len(line) > limit and not line.endswith(b"\n"):
                    while True:  # drop the rest of the oversized line
                        rest = source.readline(limit)
                        if not rest or rest.endswith(b"\n"):
                            break
                    line = _OVERSIZED
                lines.put(line)
        except (OSError, ValueError):  # input closed under us
            pass
        finally:
            ended.set()
            lines.put(None)

    def answer() -> None:
        nonlocal after_first_reply
        try:
            while not stopping.is_set():
                line = lines.get()
                if line is None:
                    return
                working.set()
                if line is _OVERSIZED:
                    send(encode(_too_long(limit)))
                elif line.strip():
                    reply = _handle(protocol, line)
                    if reply is not None:
                        send(reply)
                        if after_first_reply is not None:
                            after_first_reply()
                            after_first_reply = None
                    for note in protocol.list_changed():
                        send(note)
                    if protocol.shutdown_requested:
                        return
                working.clear()
        except (OSError, ValueError):  # stdout closed (BrokenPipeError) or unusable
            return
        finally:
            finished.set()

    for target, name in ((read, "handrail-stdin"), (answer, "handrail-answer")):
        threading.Thread(target=target, name=name, daemon=True).start()
    try:
        while not finished.wait(0.05):
            if ended.is_set():  # no more input: what is in hand may still finish, briefly
                finished.wait(shutdown_timeout)
                break
    except (_Stop, KeyboardInterrupt):
        stopping.set()
        if working.is_set():  # finish the message in hand, if it is quick enough
            with contextlib.suppress(_Stop, KeyboardInterrupt):
                finished.wait(shutdown_timeout)
        else:
            return 0
    if not finished.is_set():
        log.warning("stopping with a request still running after %gs", shutdown_timeout)
    return 0


_OVERSIZED = b"\x00oversized"  # a marker, never a line: a read line is never this object


def _too_long(max_line: int) -> dict[str, object]:
    return _error(
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
        return encode(_error(None, INTERNAL_ERROR, "Internal error", {"errorId": error_id}))
