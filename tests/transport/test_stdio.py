"""The stdio loop reads whatever chunks the pipe delivers and answers every line in
them before flushing once: however the bytes are cut, the answers are the same, one
line each, in order (a line over the limit refused once, a last line without its
newline answered)."""

from __future__ import annotations

import io
import json
import signal
import sys
from typing import Any

import pytest

from handrail.catalog import Catalog
from handrail.protocol.core import Protocol
from handrail.service.core import Service
from handrail.transport.stdio import serve

pytestmark = pytest.mark.slow

LIMIT = 2048
LINES = [
    b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
    b"",
    b"   ",
    b'{"jsonrpc":"2.0","id":2,"method":"ping"}\r',
    b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"pad":"' + b"x" * 3000 + b'"}}',
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
    b"not json",
    b'{"jsonrpc":"2.0","id":4,"method":"ping","params":{"pad":"' + b"y" * 1900 + b'"}}',
    b'{"jsonrpc":"2.0","id":5,"method":"ping"}',
]
STREAM = b"\n".join(LINES)  # the last line has no newline


class Trickle(io.RawIOBase):
    """A pipe that hands over at most `size` bytes per read."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size, self.at = data, size, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        piece = self.data[self.at : self.at + min(self.size, len(buffer))]
        buffer[: len(piece)] = piece
        self.at += len(piece)
        return len(piece)


class Counting(io.BytesIO):
    flushes = 0

    def flush(self) -> None:
        self.flushes += 1
        super().flush()


def run(source: io.BufferedIOBase) -> tuple[list[Any], int]:
    protocol = Protocol(Service(Catalog([])))
    protocol.initialized = True
    out = Counting()
    saved = sys.stdout, signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        assert serve(protocol, source, out, max_line=LIMIT) == 0
    finally:
        sys.stdout = saved[0]
        signal.signal(signal.SIGTERM, saved[1])
        signal.signal(signal.SIGINT, saved[2])
    lines = out.getvalue().split(b"\n")
    assert lines.pop() == b"", "every answer ends in a newline"
    return [json.loads(line) for line in lines], out.flushes


def summary(answers: list[Any]) -> list[Any]:
    return [(a["id"], "result" if "result" in a else a["error"]["code"]) for a in answers]


EXPECTED = [(1, "result"), (2, "result"), (None, -32600), (None, -32700), (4, "result"), (5, "result")]


@pytest.mark.parametrize("size", [1, 7, 64, 2049, 1 << 16])
def test_answers_do_not_depend_on_how_the_bytes_arrive(size: int) -> None:
    answers, _ = run(io.BufferedReader(Trickle(STREAM, size), buffer_size=max(size, 8)))
    assert summary(answers) == EXPECTED
    refused = answers[2]["error"]["data"]
    assert refused == {"details": f"line longer than {LIMIT} bytes", "limit": "maxLineBytes", "value": LIMIT}


def test_pipelined_requests_are_flushed_together() -> None:
    answers, flushes = run(io.BytesIO(STREAM))
    assert summary(answers) == EXPECTED
    assert flushes <= 2, "one read, one flush (and one at the end of input)"
