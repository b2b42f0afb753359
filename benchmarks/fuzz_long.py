"""The long protocol fuzz run, for manual use (SECURITY.md quotes its figures).

    python -m benchmarks.fuzz_long                  # 200,000 lines in-process, 20,000 through a server
    python -m benchmarks.fuzz_long --lines 1000000 --process-lines 100000 --seed 7
    python -m benchmarks.fuzz_long --lines 0 --process-lines 0 --documents 1000   # hostile workflows

Lines come from a seeded generator: JSON-RPC envelopes for every method with a wrong
value in a field of their params, batches, arbitrary bytes, truncated and byte-flipped
requests, invalid UTF-8, nesting thousands deep, huge numbers, and (through the
server) lines over the line limit. Each goes to `Protocol.handle` in-process; a share
also goes to a real `handrail start` over its pipes, in order, each group of lines
followed by a `ping` that fences its replies.

The property checked for every line: a request gets exactly one well-formed response
carrying its id (null where the id could not be read), a notification gets none, no
reply is an internal error (-32603, a crash caught), no call takes longer than
HANG_SECONDS, and the server answers a final `ping`. A third run sends hostile
workflow documents (benchmarks/hostile.py: deep loops, wide conditions, recursive and
doubling schemas, backtracking patterns, amplifying templates) and asserts each is
answered within the request's time budget. The counts are printed and
written to benchmarks/results/fuzz.json. tests/reliability/test_fuzz_protocol.py
runs the same generator briefly.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.corpus_path import corpus_folder

ROOT = Path(__file__).resolve().parents[1]
CORPUS = corpus_folder()
LOOPS = CORPUS / "workflows" / "examples" / "loops"
RESULTS = ROOT / "benchmarks" / "results"
HANG_SECONDS = 10.0
INTERNAL_ERROR = -32603

TOOLS = {
    "workflow_list": {},
    "workflow_get": {"id": "coding-task"},
    "workflow_next": {
        "workflowId": "simple-batch-example",
        "completedSteps": ["load-data"],
        "context": {"items": ["a", "b"], "taskScope": "large", "complexity": 0.8},
        "state": {"loops": [{"id": "process-items", "iteration": 1}]},
        "currentStep": "process-single-item",
    },
    "workflow_validate": {
        "workflowId": "coding-task",
        "stepId": "verify",
        "output": "## Files changed\n- src/app.py:12\nAll tests passed (3 passed).",
        "context": {"taskScope": "large"},
    },
    "workflow_validate_json": {"workflow": '{"id": "x", "steps": []}'},
    "workflow_get_schema": {},
}
METHODS = {
    "initialize": {
        "protocolVersion": "2025-06-18",
        "capabilities": {"roots": {"listChanged": True}},
        "clientInfo": {"name": "fuzz", "version": "1"},
    },
    "ping": {},
    "tools/list": {"cursor": "x"},
    "tools/call": {"name": "workflow_list", "arguments": {}},
    "resources/list": {},
    "resources/read": {"uri": "workflow://coding-task"},
    "resources/templates/list": {},
    "prompts/list": {},
    "prompts/get": {"name": "coding-task", "arguments": {}},
    "completion/complete": {
        "ref": {"type": "ref/prompt", "name": "x"},
        "argument": {"name": "a", "value": ""},
    },
    "logging/setLevel": {"level": "debug"},
    "server/discover": {},
    "shutdown": {},
    **TOOLS,
}
NOTIFICATIONS = ["notifications/initialized", "notifications/cancelled", "notifications/progress"]
STRANGE_TEXT = [
    "",
    " ",
    "\u0000",
    "\ud800",
    "\udfff",
    "\uffff",
    "é",
    "👍🏽",
    "\u202e",
    "a" * 300,
    "../../etc/passwd",
    "workflow://",
    "workflow://../x",
    "%s%n{0}",
    "null",
    "1e400",
    "-0",
    "(a+)+$",
    "fault-crash",
    json.dumps(
        {
            "id": "workflow",
            "name": "W",
            "description": "d",
            "version": "1.0.0",
            "steps": [
                {
                    "id": "s-1",
                    "title": "t",
                    "prompt": "p",
                    "validationCriteria": [
                        {"type": "regex", "pattern": "(a+)+$", "message": "m"},
                        {"type": "schema", "schema": {"$ref": "file:///etc/passwd"}, "message": "m"},
                        {"type": "schema", "schema": {"pattern": "(?<=x)(a|aa)+$"}, "message": "m"},
                    ],
                }
            ],
        }
    ),
]
BIG_NUMBERS = [
    0,
    -1,
    2**31,
    2**53 + 1,
    2**63,
    -(2**63) - 1,
    2**64,
    10**30,
    -(10**300),
    10**4000,
    1e308,
    -1e-308,
    0.5,
    1.0,
]


# -- the generator -------------------------------------------------------------------------


class Generator:
    """Deterministic lines of hostile input (bytes without a newline)."""

    def __init__(self, seed: int, *, max_line: int | None = None, process: bool = False) -> None:
        self.rng = random.Random(seed)
        self.max_line = max_line
        self.process = process  # no `shutdown`: a real server would leave
        self.next_id = 0

    def line(self) -> bytes:
        r = self.rng.random()
        if r < 0.40:
            data = self.dump(self.envelope())
        elif r < 0.50:
            data = self.dump([self.envelope() for _ in range(self.rng.randint(0, 6))])
        elif r < 0.58:
            data = self.raw_bytes()
        elif r < 0.68:
            data = self.truncated()
        elif r < 0.78:
            data = self.flipped()
        elif r < 0.83:
            data = self.invalid_utf8()
        elif r < 0.90:
            data = self.deep()
        elif r < 0.97:
            data = self.dump(self.envelope(huge=True))
        elif self.max_line is not None and r < 0.985:
            data = self.oversized()
        else:
            data = self.dump(self.rng.choice([self.random_json(3), {}, [], None, 1, "x"]))
        return data.replace(b"\n", b" ")

    def dump(self, value: Any) -> bytes:
        try:
            return json.dumps(value, ensure_ascii=self.rng.random() < 0.5, allow_nan=False).encode(
                "utf-8", "surrogatepass"
            )
        except ValueError:  # an integer too long to write
            return b'{"jsonrpc":"2.0","id":1,"method":"ping"}'

    def new_id(self) -> Any:
        self.next_id += 1
        roll = self.rng.random()
        if roll < 0.6:
            return self.next_id
        if roll < 0.8:
            return f"id-{self.next_id}"
        return self.rng.choice([None, True, 1.5, [], {}, "", -(2**70), 2**70, 10**50, "\ud800"])

    def envelope(self, *, huge: bool = False) -> Any:
        names = [m for m in METHODS if not (self.process and m == "shutdown")]
        notification = self.rng.random() < 0.15
        method: Any = (
            self.rng.choice(NOTIFICATIONS)
            if notification and self.rng.random() < 0.7
            else self.rng.choice(names)
        )
        params = self.params(method if isinstance(method, str) else "", huge)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notification:
            message["id"] = self.new_id()
        for _ in range(self.rng.choice([0, 0, 0, 1, 2])):  # break the envelope itself
            key = self.rng.choice(["jsonrpc", "method", "params", "id", "result", "error", "extra"])
            if self.rng.random() < 0.3:
                message.pop(key, None)
            else:
                message[key] = self.random_json(2)
        return message

    def params(self, method: str, huge: bool) -> Any:
        base: Any = json.loads(json.dumps(METHODS.get(method, {})))
        if method == "tools/call":
            name = self.rng.choice([*TOOLS, "nope", ""])
            base = {"name": name, "arguments": json.loads(json.dumps(TOOLS.get(name, {})))}
            target = base["arguments"]
        else:
            target = base
        for _ in range(self.rng.choice([0, 1, 1, 2, 3])):  # a wrong value in a field
            keys = list(target) if isinstance(target, dict) else []
            if not keys or self.rng.random() < 0.2:
                keys.append(self.rng.choice(["extra", "_meta", "context", "output", "id", "name"]))
            key = self.rng.choice(keys)
            if self.rng.random() < 0.15:
                target.pop(key, None)
            else:
                target[key] = self.big_value() if huge else self.random_json(3)
        if self.rng.random() < 0.05:
            return self.random_json(2)  # params that are no object
        return base

    def random_json(self, depth: int) -> Any:
        roll = self.rng.random()
        if depth <= 0 or roll < 0.45:
            return self.rng.choice(
                [
                    None,
                    True,
                    False,
                    self.rng.randint(-1000, 1000),
                    self.rng.choice(BIG_NUMBERS),
                    self.rng.random() * 10 ** self.rng.randint(-10, 10),
                    self.rng.choice(STRANGE_TEXT),
                    "".join(chr(self.rng.randint(0, 0x10FFFF)) for _ in range(self.rng.randint(0, 8))),
                    self.rng.choice(
                        [
                            "coding-task",
                            "plan",
                            "verify",
                            "simple-batch-example",
                            "load-data",
                            "process-items",
                        ]
                    ),
                ]
            )
        if roll < 0.75:
            return [self.random_json(depth - 1) for _ in range(self.rng.randint(0, 4))]
        return {
            self.rng.choice(["a", "id", "name", "loops", "iteration", "", "é", "\ud800"]): self.random_json(
                depth - 1
            )
            for _ in range(self.rng.randint(0, 4))
        }

    def big_value(self) -> Any:
        roll = self.rng.random()
        if roll < 0.3:
            return self.rng.choice(BIG_NUMBERS)
        if roll < 0.6:
            return "x" * self.rng.choice([1_000, 70_000, 300_000])
        if roll < 0.8:
            return [self.rng.choice(["plan", "a", 1]) for _ in range(self.rng.choice([100, 20_000]))]
        value: Any = 1
        for _ in range(self.rng.choice([50, 200, 900])):
            value = [value] if self.rng.random() < 0.5 else {"a": value}
        return value

    def raw_bytes(self) -> bytes:
        return bytes(self.rng.randint(0, 255) for _ in range(self.rng.randint(0, 200)))

    def truncated(self) -> bytes:
        data = self.dump(self.envelope())
        return data[: self.rng.randint(0, max(0, len(data) - 1))]

    def flipped(self) -> bytes:
        data = bytearray(self.dump(self.envelope()))
        for _ in range(self.rng.randint(1, 4)):
            if not data:
                break
            at = self.rng.randrange(len(data))
            action = self.rng.random()
            if action < 0.4:
                data[at] = self.rng.randint(0, 255)
            elif action < 0.7:
                data.insert(at, self.rng.choice(b'{}[]",:\\0123456789eE+-.tfn \xff\xc3'))
            else:
                del data[at]
        return bytes(data)

    def invalid_utf8(self) -> bytes:
        data = self.dump(self.envelope())
        bad = self.rng.choice(
            [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\x80"]
        )
        at = data.find(b'"', self.rng.randint(0, max(0, len(data) - 1)))
        if at < 0:
            return data + bad
        return data[: at + 1] + bad + data[at + 1 :]

    def deep(self) -> bytes:
        n = self.rng.choice([10, 100, 500, 1000, 1100, 3000, 20_000, 100_000])
        opener, closer = self.rng.choice([(b"[", b"]"), (b'{"a":', b"}")])
        inner = opener * n + b"1" + closer * n
        if self.rng.random() < 0.5:
            return inner
        rid = self.new_id()
        head = json.dumps({"jsonrpc": "2.0", "id": rid if isinstance(rid, int) else 1, "method": "ping"})
        return head[:-1].encode() + b',"params":{"deep":' + inner + b"}}"

    def oversized(self) -> bytes:
        assert self.max_line is not None
        pad = self.max_line + self.rng.randint(1, 3 * self.max_line)
        return b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":"' + b"p" * pad + b'"}}'


# -- the property -------------------------------------------------------------------------


class Violation(AssertionError):
    pass


_LOOSE = "loose"  # a message nested so deep the parse may go either way


def expected(line: bytes, *, framed: bool) -> Any:
    """What the server owes for `line`: None (nothing), ("one", id) or ("batch", Counter
    of ids), following JSON-RPC 2.0 as the server implements it (see protocol._one)."""
    if framed and not line.strip():
        return None
    try:
        message = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
    except RecursionError:
        return _LOOSE
    except (ValueError, UnicodeDecodeError):
        return ("one", None)
    if isinstance(message, list):
        if not message:
            return ("one", None)
        owed = [_owed(m) for m in message]
        ids = Counter(_key(i) for i in owed if i is not _NONE)
        return ("batch", ids) if ids else None
    owed_one = _owed(message)
    return None if owed_one is _NONE else ("one", owed_one)


_NONE = object()


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _valid_id(rid: Any) -> bool:
    return isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))


def _owed(message: Any) -> Any:
    """The id of the one response `message` is owed, or _NONE."""
    if not isinstance(message, dict):
        return None
    has_id = "id" in message
    if has_id and not _valid_id(message["id"]):
        return None
    rid = message["id"] if has_id else None
    if message.get("jsonrpc") != "2.0":
        return rid if has_id else _NONE
    if not isinstance(message.get("method"), str):
        if "result" in message or "error" in message:
            return _NONE  # a response from the client: ignored
        return rid
    return rid if has_id else _NONE


def _key(rid: Any) -> str:
    return json.dumps(rid)


def check(line: bytes, reply: bytes | None, *, framed: bool = False) -> None:
    """Raise Violation unless `reply` is what the server owes for `line`."""
    from tests.helpers.server import check_message

    owed = expected(line, framed=framed)
    if reply is None:
        if owed is None or owed == _LOOSE:
            return
        raise Violation(f"no reply; owed {owed!r}")
    if b"\n" in reply:
        raise Violation("a reply holds a newline: it would be two lines")
    try:
        message = json.loads(reply.decode("utf-8"))
        check_message(message)
    except (AssertionError, ValueError) as exc:
        raise Violation(f"malformed reply {reply[:200]!r}: {exc}") from None
    items = message if isinstance(message, list) else [message]
    for item in items:
        if item.get("error", {}).get("code") == INTERNAL_ERROR:
            raise Violation(f"internal error (a crash): {item}")
    if owed == _LOOSE:
        return
    if owed is None:
        raise Violation(f"a reply where none is owed: {reply[:200]!r}")
    kind, ids = owed
    if kind == "one":
        if isinstance(message, list) or _key(message["id"]) != _key(ids):
            raise Violation(f"owed one response with id {ids!r}, got {reply[:200]!r}")
    elif not isinstance(message, list) or Counter(_key(m["id"]) for m in message) != ids:
        raise Violation(f"owed responses with ids {dict(ids)}, got {reply[:300]!r}")


# -- the runs ------------------------------------------------------------------------------


@dataclass
class Tally:
    where: str
    inputs: int = 0
    crashes: int = 0  # internal errors, exceptions out of handle, a dead server
    hangs: int = 0  # a call past HANG_SECONDS, or no reply from the server in time
    lost: int = 0  # replies missing, extra, or with the wrong id
    malformed: int = 0
    worst_ms: float = 0.0
    seconds: float = 0.0
    final_ping: bool = False
    examples: list[str] = field(default_factory=list)

    def count(self, line: bytes, problem: str, kind: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if len(self.examples) < 10:
            self.examples.append(f"{kind}: {problem} <- {line[:160]!r}")

    @property
    def clean(self) -> bool:
        return self.crashes == self.hangs == self.lost == self.malformed == 0 and self.final_ping


def _kind(problem: str) -> str:
    if "internal error" in problem:
        return "crashes"
    if "malformed" in problem or "newline" in problem:
        return "malformed"
    return "lost"


def in_process_protocol() -> Any:
    from handrail.catalog import load_catalog
    from handrail.protocol.core import Protocol
    from handrail.service.core import Service

    protocol = Protocol(Service(load_catalog(LOOPS)))
    protocol.handle(
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": METHODS["initialize"]})
    )
    protocol.handle(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    return protocol


def run_in_process(seed: int, n: int, protocol: Any = None) -> Tally:
    protocol = protocol or in_process_protocol()
    generator = Generator(seed)
    tally = Tally("in-process")
    started = time.perf_counter()
    for _ in range(n):
        line = generator.line()
        tally.inputs += 1
        t0 = time.perf_counter()
        try:
            reply = protocol.handle(line)
        except Exception as exc:
            tally.count(line, f"{type(exc).__name__} escaped handle", "crashes")
            continue
        spent = time.perf_counter() - t0
        tally.worst_ms = max(tally.worst_ms, spent * 1000)
        if spent > HANG_SECONDS:
            tally.count(line, f"took {spent:.1f} s", "hangs")
        try:
            check(line, reply)
        except Violation as exc:
            tally.count(line, str(exc), _kind(str(exc)))
    reply = protocol.handle(b'{"jsonrpc":"2.0","id":"final","method":"ping"}')
    tally.final_ping = reply is not None and json.loads(reply) == {
        "jsonrpc": "2.0",
        "id": "final",
        "result": {},
    }
    tally.seconds = time.perf_counter() - started
    return tally


def run_process(seed: int, n: int, *, max_line: int = 65_536, group: int = 40) -> Tally:
    """`n` lines through a real `handrail start --max-line max_line`, in groups, each
    fenced by a ping whose reply marks the end of the group's replies."""
    from tests.helpers.server import Server

    generator = Generator(seed, max_line=max_line, process=True)
    tally = Tally("handrail start")
    started = time.perf_counter()
    args = ["--workflows", str(LOOPS), "--max-line", str(max_line), "--log-level", "error"]
    with Server(*args) as server:
        server.initialize()
        fence = 0
        for lines in _groups(generator, n, group, max_line):
            tally.inputs += len(lines)
            fence += 1
            fence_id = f"fence-{fence}"
            t0 = time.perf_counter()
            server.send_raw(b"".join(line + b"\n" for line in lines) + _ping(fence_id))
            replies: list[Any] = []
            try:
                while True:
                    message = server.recv(HANG_SECONDS * 3)
                    if isinstance(message, dict) and message.get("id") == fence_id and "result" in message:
                        break
                    if isinstance(message, dict) and "method" in message:
                        continue  # a notification, owed to nobody in particular
                    replies.append(message)
            except EOFError:
                tally.count(lines[0], "the server exited", "crashes")
                break
            except AssertionError as exc:
                kind = "hangs" if "no reply within" in str(exc) else "malformed"
                tally.count(lines[0], str(exc)[:200], kind)
                break
            tally.worst_ms = max(tally.worst_ms, (time.perf_counter() - t0) * 1000 / max(1, len(lines)))
            _match(lines, replies, max_line, tally)
        tally.final_ping = _final_ping(server)
    tally.seconds = time.perf_counter() - started
    return tally


DOCUMENT_BUDGET_SECONDS = 2  # the server's --max-request-seconds in run_documents


def run_documents(seed: int, n: int) -> Tally:
    """`n` requests over hostile workflow documents (benchmarks/hostile.py) through a real
    `handrail start`: documents sent to workflow_validate_json, and calls on hostile
    workflows it serves. Each must be answered, never with -32603, within the request
    budget plus slack for a loaded machine; the server must answer a final ping."""
    import os
    import tempfile

    from benchmarks import hostile
    from tests.helpers.server import Server

    rng = random.Random(seed)
    tally = Tally("hostile docs")
    started = time.perf_counter()
    served = [d for d in hostile.all_documents() if d["id"] != "many-steps"]
    outputs = [
        hostile.nested_output(rng.randint(1, 900)),
        hostile.catastrophic_output(200),
        "un café noir " * 5000,
        hostile.many_keys_output(20_000),
    ]
    with tempfile.TemporaryDirectory(prefix="handrail-hostile-") as folder:
        for document in served:
            path = Path(folder) / f"{document['id']}.json"
            path.write_text(json.dumps(document), encoding="utf-8")
            os.utime(path, (time.time() - 3600,) * 2)  # settled: read once
        args = ["--workflows", folder, "--max-request-seconds", str(DOCUMENT_BUDGET_SECONDS)]
        with Server(*args, "--regex-timeout", "5000", "--log-level", "error") as server:
            server.initialize()
            for i in range(n):
                choice = rng.random()
                if choice < 0.4:
                    method = "workflow_validate_json"
                    params: dict[str, Any] = {"workflow": json.dumps(hostile.random_document(rng))}
                elif choice < 0.7:
                    document = rng.choice(served)
                    method, params = (
                        "workflow_next",
                        {
                            "workflowId": document["id"],
                            "completedSteps": rng.choice([[], ["first"]]) if "loop" in document["id"] else [],
                            "context": rng.choice(
                                [hostile.NESTED_CONTEXT, {"go": True}, {"x": "y" * 100_000}]
                            ),
                        },
                    )
                else:
                    document = rng.choice(served)
                    step = document["steps"][0]
                    method, params = (
                        "workflow_validate",
                        {
                            "workflowId": document["id"],
                            "stepId": step["id"],
                            "output": rng.choice(outputs),
                        },
                    )
                line = json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}).encode()
                tally.inputs += 1
                t0 = time.perf_counter()
                try:
                    server.send_raw(line + b"\n")
                    reply = server.response(i, timeout=DOCUMENT_BUDGET_SECONDS + 28)
                except EOFError:
                    tally.count(line, "the server exited", "crashes")
                    break
                except AssertionError as exc:
                    tally.count(line, str(exc)[:200], "hangs")
                    break
                spent = time.perf_counter() - t0
                tally.worst_ms = max(tally.worst_ms, spent * 1000)
                if spent > DOCUMENT_BUDGET_SECONDS + 5:
                    tally.count(line, f"took {spent:.1f} s, past the budget", "hangs")
                if reply.get("error", {}).get("code") == INTERNAL_ERROR:
                    tally.count(line, f"internal error {reply!r:.200}", "crashes")
            tally.final_ping = _final_ping(server)
    tally.seconds = time.perf_counter() - started
    return tally


def _final_ping(server: Any) -> bool:
    try:
        reply = server.request("ping", rid="final")
    except (AssertionError, EOFError):
        return False
    return bool(reply == {"jsonrpc": "2.0", "id": "final", "result": {}})


def _groups(generator: Generator, n: int, size: int, max_line: int) -> Iterator[list[bytes]]:
    """`n` lines in groups of `size`; a line nested past the stack goes alone, since the
    server may read it as a notification (no reply) or not (one)."""
    group: list[bytes] = []
    for _ in range(n):
        line = generator.line()
        if _loose(line, max_line):
            if group:
                yield group
                group = []
            yield [line]
            continue
        group.append(line)
        if len(group) == size:
            yield group
            group = []
    if group:
        yield group


def _loose(line: bytes, max_line: int) -> bool:
    return len(line) <= max_line and expected(line + b"\n", framed=True) == _LOOSE


def _ping(rid: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "ping"}).encode() + b"\n"


def _match(lines: list[bytes], replies: list[Any], max_line: int, tally: Tally) -> None:
    """Replies come in the order of the lines; pair them up by what each line is owed."""
    queue = list(replies)
    for line in lines:
        if len(line) > max_line:  # over the limit (the newline is not counted)
            owed: Any = ("limit", None)
        else:
            owed = expected(line + b"\n", framed=True)
        if owed is None:
            continue
        if owed == _LOOSE and len(lines) == 1 and not queue:
            continue  # nested past the stack: the server may have read it as a notification
        if not queue:
            tally.count(line, f"no reply; owed {owed!r}", "lost")
            continue
        message = queue.pop(0)
        reply = json.dumps(message).encode()
        if owed[0] == "limit":
            refused = (
                isinstance(message, dict)
                and message.get("id", 0) is None
                and message.get("error", {}).get("data", {}).get("limit") == "maxLineBytes"
            )
            if not refused:
                tally.count(line, f"owed a line-limit error, got {reply[:200]!r}", "lost")
            continue
        try:
            check(line + b"\n", reply, framed=True)
        except Violation as exc:
            tally.count(line, str(exc), _kind(str(exc)))
    for extra in queue:
        tally.count(b"", f"an extra reply {extra!r:.200}", "lost")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lines", type=int, default=200_000, help="lines in-process")
    parser.add_argument("--process-lines", type=int, default=20_000, help="lines through a real server")
    parser.add_argument("--max-line", type=int, default=65_536, help="the server's --max-line")
    parser.add_argument("--documents", type=int, default=200, help="requests over hostile documents")
    parser.add_argument("--out", type=Path, default=RESULTS / "fuzz.json")
    args = parser.parse_args(argv)
    tallies = [run_in_process(args.seed, args.lines)]
    if args.process_lines:
        tallies.append(run_process(args.seed + 1, args.process_lines, max_line=args.max_line))
    if args.documents:
        tallies.append(run_documents(args.seed + 2, args.documents))
    columns = ("inputs", "crashes", "hangs", "lost", "malformed", "worst ms")
    print(f"{'where':<16} " + " ".join(f"{c:>9}" for c in columns))
    for t in tallies:
        print(
            f"{t.where:<16} {t.inputs:>9} {t.crashes:>9} {t.hangs:>9} {t.lost:>9} {t.malformed:>9} "
            f"{t.worst_ms:>9.1f}   final ping {'ok' if t.final_ping else 'FAILED'}, {t.seconds:.0f} s"
        )
        for example in t.examples:
            print("   ", example)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "command": " ".join(
            ["python -m benchmarks.fuzz_long", *(argv if argv is not None else sys.argv[1:])]
        ),
        "seed": args.seed,
        "python": sys.version.split()[0],
        "runs": [{**asdict(t), "worst_ms": math.ceil(t.worst_ms * 10) / 10} for t in tallies],
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if all(t.clean for t in tallies) else 1


if __name__ == "__main__":
    raise SystemExit(main())
