"""Protocol fuzzing: whatever a client sends, every request line gets exactly one
well-formed response with its id (null where the id could not be read),
notifications get none, nothing is an internal error, and the server stays up and
answers a final ping.

In-process against `Protocol.handle` with hypothesis (arbitrary bytes, JSON-RPC
envelopes of every method with wrong values in their fields, batches, truncated and
byte-flipped lines, invalid UTF-8, deep nesting, huge numbers), then the seeded
generator of benchmarks/fuzz_long.py briefly in-process and through a real
`handrail start` (line limit included). `python -m benchmarks.fuzz_long` is the long run.
"""

from __future__ import annotations

import io
import json
import signal
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from benchmarks import fuzz_long
from benchmarks.fuzz_long import METHODS, NOTIFICATIONS, TOOLS, check
from handrail.catalog import Catalog
from handrail.protocol.core import Protocol
from handrail.service.core import Service

pytestmark = pytest.mark.slow

FUZZ = settings(
    max_examples=600,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@pytest.fixture(scope="module")
def protocol() -> Protocol:
    return fuzz_long.in_process_protocol()


def _handled(protocol: Protocol, line: bytes) -> None:
    check(line, protocol.handle(line))


# -- values ----------------------------------------------------------------------------------

HUGE = st.sampled_from([2**63, -(2**63) - 1, 2**64, 10**30, -(10**300), 10**4000, 1e308, -1e-308])
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | HUGE
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(["coding-task", "simple-batch-example", "load-data", "plan", "\ud800", "x" * 5000])
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
IDS = st.integers() | st.text(max_size=10) | HUGE | st.sampled_from([None, True, 1.5, [], {}])


def _dump(value: Any) -> bytes:
    try:
        return json.dumps(value, allow_nan=False).encode()
    except ValueError:  # an integer too long for str(): the server would see a parse error
        return b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


@st.composite
def params_of(draw: st.DrawFn, method: str) -> Any:
    """The method's usual params with wrong values put in some of their fields."""
    base = json.loads(json.dumps(METHODS.get(method, {})))
    if method == "tools/call":
        name = draw(st.sampled_from([*TOOLS, "nope"]))
        base = {"name": name, "arguments": json.loads(json.dumps(TOOLS.get(name, {})))}
        target = base["arguments"]
    else:
        target = base
    keys = [*target, "extra", "_meta"]
    for key in draw(st.lists(st.sampled_from(keys), max_size=3, unique=True)):
        if draw(st.booleans()) and key in target:
            del target[key]
        else:
            target[key] = draw(JSON)
    if method == "tools/call" and draw(st.integers(0, 9)) == 0:
        base["arguments"] = draw(JSON)  # arguments that are no object
    return base


@st.composite
def envelopes(draw: st.DrawFn) -> Any:
    method = draw(st.sampled_from([*METHODS, *NOTIFICATIONS]))
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": draw(params_of(method))}
    if not method.startswith("notifications/"):
        message["id"] = draw(IDS)
    for key in draw(st.lists(st.sampled_from(["jsonrpc", "method", "params", "id", "result"]), max_size=2)):
        if draw(st.booleans()):
            message.pop(key, None)
        else:
            message[key] = draw(JSON)
    return message


# -- the properties ------------------------------------------------------------------------


@FUZZ
@given(st.binary(max_size=400))
@example(b"")
@example(b"\xff\xfe")
@example(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\xed\xa0\x80')
@example(b"[" * 100_000)
def test_arbitrary_bytes(protocol: Protocol, data: bytes) -> None:
    _handled(protocol, data)


@FUZZ
@given(envelopes())
def test_every_method_with_wrong_values_in_its_fields(protocol: Protocol, message: Any) -> None:
    _handled(protocol, _dump(message))


@FUZZ
@given(st.lists(envelopes() | JSON, max_size=6))
def test_batches(protocol: Protocol, batch: list[Any]) -> None:
    _handled(protocol, _dump(batch))


@FUZZ
@given(envelopes(), st.data())
def test_truncated_and_flipped_lines(protocol: Protocol, message: Any, data: st.DataObject) -> None:
    line = _dump(message)
    cut = data.draw(st.integers(0, len(line)))
    _handled(protocol, line[:cut])
    flipped = bytearray(line)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(flipped) - 1))
        flipped[at] = data.draw(st.integers(0, 255))
    _handled(protocol, bytes(flipped))
    bad = data.draw(
        st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf"])
    )
    at = data.draw(st.integers(0, len(line)))
    _handled(protocol, line[:at] + bad + line[at:])


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([1, 100, 900, 1_000, 1_024, 1_100, 5_000, 200_000]),
    st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]),
    st.sampled_from(["bare", "params", "context", "output-json"]),
)
def test_deep_nesting(protocol: Protocol, depth: int, brackets: tuple[bytes, bytes], where: str) -> None:
    opener, closer = brackets
    inner = opener * depth + b"1" + closer * depth
    if where == "bare":
        line = inner
    elif where == "params":
        line = b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"deep":' + inner + b"}}"
    elif where == "context":
        line = (
            b'{"jsonrpc":"2.0","id":4,"method":"workflow_next","params":{"workflowId":"simple-batch-example",'
            b'"completedSteps":[],"context":{"deep":' + inner + b"}}}"
        )
    else:  # an agent's output that is deeply nested JSON, for a schema rule to parse
        output = json.dumps(inner.decode())
        line = (
            b'{"jsonrpc":"2.0","id":5,"method":"workflow_validate","params":{"workflowId":"coding-task",'
            b'"stepId":"plan","output":' + output.encode() + b"}}"
        )
    _handled(protocol, line)


@FUZZ
@given(st.sampled_from([*TOOLS]), HUGE | st.integers(), st.data())
def test_huge_numbers_everywhere(
    protocol: Protocol, tool: str, number: int | float, data: st.DataObject
) -> None:
    arguments = json.loads(json.dumps(TOOLS[tool]))
    key = data.draw(st.sampled_from([*arguments, "context"]))
    arguments[key] = data.draw(st.sampled_from([number, [number], {"n": number}]))
    rid = data.draw(st.sampled_from([number, 7])) if isinstance(number, int) else 7
    _handled(protocol, _dump({"jsonrpc": "2.0", "id": rid, "method": tool, "params": arguments}))
    _handled(
        protocol,
        _dump(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
        ),
    )


def test_the_seeded_generator_in_process() -> None:
    tally = fuzz_long.run_in_process(seed=11, n=4000)
    assert tally.clean, tally.examples
    assert tally.inputs == 4000


def test_the_seeded_generator_through_handrail_start() -> None:
    tally = fuzz_long.run_process(seed=12, n=1200, max_line=65_536)
    assert tally.clean, tally.examples
    assert tally.inputs == 1200 and tally.final_ping


# -- the stdio framing, in-process ---------------------------------------------------------

LINES = (
    st.binary(max_size=120).map(lambda b: b.replace(b"\n", b" "))
    | envelopes().filter(lambda m: m.get("method") != "shutdown").map(_dump)  # shutdown ends the loop
    | st.sampled_from([b"", b"   ", b"\r", b"x" * 3000, b'{"jsonrpc":"2.0","id":9,"method":"ping"}'])
)


ASKS_FOR_ROOTS = [
    _dump(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {"roots": {}},
                "clientInfo": {"name": "fuzz", "version": "1"},
            },
        }
    ),
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(LINES, min_size=1, max_size=8), st.booleans())
@example(ASKS_FOR_ROOTS, True)  # once found by chance: the server's own roots/list request
def test_stdio_answers_line_by_line(lines: list[bytes], final_newline: bool) -> None:
    """Through `stdio.serve` with a small line limit: one reply line per request line, in
    order, lines over the limit refused with id null, then a final ping answered."""
    from handrail.transport.stdio import serve

    protocol = Protocol(Service(Catalog([])))
    protocol.initialized = True
    stream = (
        b"\n".join(lines)
        + b'\n{"jsonrpc":"2.0","id":"last","method":"ping"}'
        + (b"\n" if final_newline else b"")
    )
    out = io.BytesIO()
    saved = sys.stdout, signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        assert serve(protocol, io.BytesIO(stream), out, max_line=2048) == 0
    finally:
        sys.stdout = saved[0]
        signal.signal(signal.SIGTERM, saved[1])
        signal.signal(signal.SIGINT, saved[2])
    replies = out.getvalue().split(b"\n")
    assert replies.pop() == b""  # every reply ends in a newline
    # a client that declared roots and said initialized is asked for them: a request of
    # the server's own, not a reply to a line
    replies = [r for r in replies if b'"method":"roots/list"' not in r]
    for line in lines:
        if len(line) >= 2048:
            refused = json.loads(replies.pop(0))
            assert refused["id"] is None and refused["error"]["data"]["limit"] == "maxLineBytes"
            continue
        owed = fuzz_long.expected(line + b"\n", framed=True)
        if owed is None:
            continue
        check(line + b"\n", replies.pop(0), framed=True)  # (no line here nests past the stack)
    assert [json.loads(r) for r in replies] == [{"jsonrpc": "2.0", "id": "last", "result": {}}]
