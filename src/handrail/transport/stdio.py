"""The stdio transport: one JSON-RPC message per line in, one per line out.

Only protocol messages reach stdout; anything else that tries to print while
serving is sent to stderr.

A `StdioServer` holds one client's session. One thread both reads and answers: it
reads what the pipe has, answers every line of it into an output buffer of its own,
and flushes when it is about to wait for more input, or when an answer has waited
`HOLD_S` for those after it, so pipelined requests cost few reads and writes, and a
line is never handed from thread to thread. A second thread watches: once a request
has been in hand for a tick (`WATCH_S`), it takes over the reading until that request
ends, so that the end of input, and the client's answer to a request of ours
(elicitation), are still seen while a long request runs. The calling thread only
waits, and takes the signals.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sized
from types import FrameType
from typing import BinaryIO, cast

from handrail.model.codec import encode
from handrail.model.errors import INTERNAL_ERROR, INVALID_REQUEST, error_response
from handrail.model.limits import SHUTDOWN_TIMEOUT_S
from handrail.observe.logs import Log
from handrail.protocol.core import Protocol

CHUNK = 1 << 16
# answers are written through a buffer this large: a burst of small answers leaves a few
# per write, yet the client starts reading the first ones while the rest are answered
# (a 64 KiB buffer held 800 of them back, and pipelined requests lost a third of their pace)
OUT_BUFFER = 1 << 13
QUEUED_LINES = 8  # while a request runs, read ahead only until this many lines wait
HOLD_S = 0.01  # an answer waits at most about this long for those after it in a burst
WATCH_S = 0.05  # a request in hand this long gets a reader of its own (end of input, answers);
# each tick wakes a thread that must take the GIL from the answering one: at 10 ms that
# cost pipelined requests about a third of their time, at 50 ms it is lost in the noise
log = Log("handrail.transport.stdio")  # logging loads with the first record


class _Stop(Exception):
    pass


class _Lines:
    """The lines read and not yet answered, and who is reading: one thread at a time
    reads (the answering one when it has nothing to do, the watcher while a request
    runs), so lines are split in order and never read twice."""

    def __init__(
        self, source: io.BufferedIOBase, limit: int, awaited: Sized, route: Callable[[bytes], bool]
    ) -> None:
        """`route(line)` takes a line meant for a request of ours while `awaited` is not
        empty (see ClientRequests)."""
        self.source, self.limit, self.awaited, self.route = source, limit, awaited, route
        self.waiting: deque[bytes] = deque()
        # `with lock:` on the lock itself (the usual look costs no Python-level call);
        # `changed` is the same lock, for the rare wait and its wake-up
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.reading = False  # a thread is in `pull` (only the holder touches `pending`)
        self.ended = False  # no more input
        self.read = 0  # lines read so far
        self.taken = 0  # lines taken to answer so far
        self.pending = bytearray()  # the start of a line whose end has not arrived yet
        self.dropping = False  # inside a line over the limit, already refused: skip to its end
        self.sleepers = 0  # threads in `changed.wait()`: none, usually, and then none to wake

    def sleep(self) -> None:
        """Wait, holding `lock`, until a reader says lines changed."""
        self.sleepers += 1
        self.changed.wait()
        self.sleepers -= 1

    def take(self) -> None:
        self.taken += 1

    def claim(self) -> bool:
        """Become the reader (call with `lock` held): False when another thread reads."""
        if self.reading:
            return False
        self.reading = True
        return True

    def pull(self, *, keep: bool = True) -> list[bytes]:
        """Read what the pipe has (blocking until it has something), split it into lines,
        release the reader's role. Called only by the thread that `claim`ed it, with no
        line waiting when `keep` is False: the lines are then returned to be answered
        at once, not queued (the answering thread, reading for itself)."""
        found: list[bytes] = []
        try:
            chunk = self.source.read1(CHUNK)
        except (OSError, ValueError):  # input closed under us
            chunk = b""
        if not chunk:
            if self.pending and not self.dropping:  # a last line without its newline
                found.append(bytes(self.pending))
            self.pending.clear()
        else:
            self._split(chunk, found)
        with self.lock:
            if keep:
                self.waiting.extend(found)
            self.read += len(found)
            if not chunk:
                self.ended = True
            self.reading = False
            if self.sleepers:
                self.changed.notify_all()
        return found

    def _split(self, chunk: bytes, found: list[bytes]) -> None:
        limit, pending = self.limit, self.pending
        if not pending and not self.dropping and not self.awaited:
            # the usual chunk: whole lines, none too long, nobody waiting for an answer:
            # split in one call, not a loop turn per line
            parts = chunk.split(b"\n")
            rest = parts.pop()
            if max(map(len, parts), default=0) <= limit:
                found.extend(parts)
                chunk = rest  # what is left starts the next line, below
        at = 0
        while (end := chunk.find(b"\n", at)) != -1:
            piece, at = chunk[at:end], end + 1
            if self.dropping:
                self.dropping = False
                continue
            if pending:
                pending += piece
                piece = bytes(pending)
                pending.clear()
            if self.awaited and self.route(piece):
                continue  # the answer the request in hand waits for (elicitation)
            found.append(OVERSIZED if len(piece) > limit else piece)
        if not self.dropping:
            pending += chunk[at:]
            if len(pending) > limit:  # refused now, not when its end arrives
                pending.clear()
                self.dropping = True
                found.append(OVERSIZED)


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

    A signal or the end of input is noticed even while a request runs: the request in
    hand gets `shutdown_timeout` seconds to finish, then the server leaves without it
    (its threads are daemons). At the end of input, the lines the client sent before it
    are all answered first; the last one gets the grace period."""
    limit = max_line if max_line is not None else protocol.limits.max_line_bytes
    source = cast(io.BufferedIOBase, stdin or _standard_input())  # read1: what the pipe has
    sink = stdout or _standard_output()
    with contextlib.redirect_stdout(sys.stderr):  # stray prints must not corrupt the protocol stream
        server = StdioServer(protocol, source, sink, limit, after_first_reply, shutdown_timeout)
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(ValueError):  # not the main thread (tests): signals stay
                signal.signal(sig, server.on_signal)
        return server.run()


class StdioServer:
    """One client on a pipe: the answering thread (`answer`), the watcher (`watch`) and
    the calling thread's wait (`run`), over the state they share, kept here."""

    def __init__(
        self,
        protocol: Protocol,
        source: io.BufferedIOBase,
        sink: BinaryIO,
        limit: int,
        after_first_reply: Callable[[], None] | None,
        shutdown_timeout: float,
    ) -> None:
        self.protocol = protocol
        self.requests = protocol.client_requests
        self.lines = _Lines(source, limit, self.requests.awaited, self.requests.route)
        self.sink = sink
        self.limit = limit
        self.after_first_reply = after_first_reply
        self.shutdown_timeout = shutdown_timeout
        self.finished = threading.Event()  # the answering thread is done: shutdown, end of input, broken pipe
        self.stopping = False  # take no further line (a flag the signal handler sets)
        self.in_hand = False  # a line is being answered
        self.writing = threading.Lock()  # the catalog watcher sends notifications from its own thread
        self.held_since = 0.0  # when the oldest answer not yet flushed was written, or 0
        protocol.on_catalog_change(self.on_change)
        protocol.connect(self.send)  # log records for the client (logging/setLevel)
        self.requests.send_through(self.send)  # elicitation/create, sent while a request is answered

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True
        raise _Stop

    def send(self, data: bytes) -> None:
        with self.writing:
            self.sink.write(data + b"\n")
            self.sink.flush()

    def on_change(self, snapshot: object) -> None:
        for note in self.protocol.list_changed():
            with contextlib.suppress(OSError, ValueError):
                self.send(note)

    def flush(self) -> None:
        with self.writing:
            if self.held_since:
                self.held_since = 0.0
                self.sink.flush()

    def next_lines(self) -> list[bytes] | None:
        """The lines waiting to be answered, all of them (reading, after a flush, when
        none waits); None at the end. Taken together, so a burst costs one look under
        the lock, not one per line."""
        lines = self.lines
        while True:
            with lines.lock:
                if lines.waiting:
                    batch = list(lines.waiting)
                    lines.waiting.clear()
                    return batch
                if lines.ended or self.stopping:
                    return None
                mine = lines.claim()
                if not mine:
                    self.flush()  # the watcher reads: what is answered goes out meanwhile
                    lines.sleep()
                    continue
            self.flush()  # nothing more to answer: out it goes before we wait for input
            found = lines.pull(keep=False)
            if found:
                return found

    def answer(self) -> None:
        """The answering thread: every line in turn, until the end, `shutdown` or a signal."""
        try:
            while not self.stopping:
                batch = self.next_lines()
                if batch is None or not self.answer_batch(batch):
                    return
                self.owed()
        except (OSError, ValueError):  # stdout closed (BrokenPipeError) or unusable
            return
        finally:
            with contextlib.suppress(OSError, ValueError):
                self.owed()
                self.flush()
            self.finished.set()
            with self.lines.changed:
                self.lines.changed.notify_all()

    def answer_batch(self, batch: list[bytes]) -> bool:
        """Answer the lines of one burst into the buffer; False: stop (a signal, `shutdown`)."""
        protocol, lines, writing = self.protocol, self.lines, self.writing
        handle, write, monotonic = protocol.handle, self.sink.write, time.monotonic  # looked up once
        for line in batch:
            if self.stopping:
                return False
            lines.take()  # only this thread writes it; the others only look
            self.in_hand = True
            out: bytes | None
            if line is OVERSIZED:
                out = encode(_too_long(self.limit))
            elif line and not line.isspace():
                try:
                    out = handle(line)
                except Exception:  # `handle` answers every failure; should one escape it
                    out = _internal_error()
            else:
                out = None
            with writing:
                if out is not None:
                    write(out + b"\n")
                now = monotonic()
                if not self.held_since:
                    self.held_since = now
                elif now - self.held_since > HOLD_S:  # a long burst: its first answers go now
                    self.held_since = 0.0
                    self.sink.flush()
            self.in_hand = False
            if out is not None and self.after_first_reply is not None:
                self.flush()  # the first answer goes out before the workflows are compiled
                self.after_first_reply()
                self.after_first_reply = None
            if protocol.shutdown_requested:
                return False
        return True

    def owed(self) -> None:
        """What the client is owed besides answers: list_changed notes, our requests (e.g.
        roots/list); looked at once per burst of lines, after their answers."""
        notes, outgoing = self.protocol.list_changed(), self.requests.take_outgoing()
        if notes or outgoing:
            with self.writing:
                for note in notes:
                    self.sink.write(note + b"\n")
                for request in outgoing:
                    self.sink.write(encode(request) + b"\n")
                self.held_since = self.held_since or time.monotonic()

    def watch(self) -> None:
        """Read for the request in hand once it has run a tick, until it is answered."""
        lines, seen = self.lines, -1
        while not self.finished.wait(WATCH_S):
            with lines.lock:
                taken = lines.taken
                if not self.in_hand or taken != seen:
                    seen = taken  # a new request (or none): give it a tick first
                    continue
                if lines.ended or len(lines.waiting) >= QUEUED_LINES or not lines.claim():
                    continue
            self.flush()  # the answers before the long request go out now, not after it
            lines.pull()

    def run(self) -> int:
        """Start both threads and wait, taking the signals, until the answering one is done
        (or the grace period of the request in hand is over)."""
        finished, protocol = self.finished, self.protocol
        try:  # a signal may come as soon as the first answer is out, before `start` returns
            for target, name in ((self.watch, "handrail-watch"), (self.answer, "handrail-answer")):
                threading.Thread(target=target, name=name, daemon=True).start()
            while not finished.wait(0.05):
                if self.lines.ended and self.lines.taken == self.lines.read:
                    # no more input, and the last line is in hand: it may still finish, briefly
                    finished.wait(self.shutdown_timeout)
                    break
        except (_Stop, KeyboardInterrupt):
            self.stopping = True
            protocol.interrupt()  # a check's processes die now; a wait for the client ends
            if not self.in_hand:
                protocol.close()
                return 0
            with contextlib.suppress(_Stop, KeyboardInterrupt):  # finish the message in hand, if quick
                finished.wait(self.shutdown_timeout)
        if not finished.is_set():
            log.warning("stopping with a request still running after %gs", self.shutdown_timeout)
            protocol.interrupt()
        protocol.close()
        return 0


OVERSIZED = b"\x00oversized"  # a marker, never a line: a read line is never this object


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


def _standard_output() -> BinaryIO:
    """Standard output, through a buffer of our own: under PYTHONUNBUFFERED (which MCP
    client settings often give a Python server) `sys.stdout.buffer` writes each answer
    at once, and the answers to a burst of requests should leave in one write."""
    try:
        return open(sys.stdout.fileno(), "wb", buffering=OUT_BUFFER, closefd=False)
    except (AttributeError, OSError, ValueError):
        return sys.stdout.buffer


def _internal_error() -> bytes:
    """The answer to a line whose failure escaped `protocol.handle`: an error without
    details for the client, the whole story in the log; the server stays up."""
    error_id = os.urandom(6).hex()
    log.exception("internal error %s while handling a line", error_id)
    return encode(error_response(None, INTERNAL_ERROR, "Internal error", {"errorId": error_id}))
