"""A scripted model on 127.0.0.1: the Anthropic Messages API, streamed as server-sent
events, playing the assistant's side of a conversation from a script.

Each request is recorded. A request for the conversation's model (`MODEL`) is answered
with the script's next turn: text, one or more tool_use calls (their input streamed as
`input_json_delta`), or a function of the request (to read what a tool answered, a run
id for one). Once the script is played out, each further request is answered with a
closing text and counted in `unscripted`. Anything else Claude Code asks (token
counting, a request for another model) gets a minimal answer and takes no turn.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "scripted-model"
CLOSING = "(the script has ended)"


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class ToolUse:
    name: str
    input: dict[str, Any]


Block = Text | ToolUse


@dataclass(frozen=True)
class Turn:
    """One assistant message: its blocks, in order."""

    blocks: tuple[Block, ...]


def say(text: str) -> Turn:
    return Turn((Text(text),))


def use(name: str, **given: Any) -> Turn:
    """A turn that calls one tool (with a line of text before it, as models do)."""
    return Turn((Text(f"Calling {name}."), ToolUse(name, given)))


Step = Turn | Callable[["Request"], Turn]


@dataclass(frozen=True)
class Request:
    """One request as it arrived."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def text(self) -> str:
        """The body as JSON text: what a test searches for a string the model was sent."""
        return json.dumps(self.body, ensure_ascii=False)

    @property
    def messages(self) -> list[dict[str, Any]]:
        found = self.body.get("messages")
        return found if isinstance(found, list) else []

    def tool_results(self) -> list[dict[str, Any]]:
        """The tool_result blocks of the last user message (the answers to the last calls)."""
        for message in reversed(self.messages):
            if message.get("role") == "user" and isinstance(message.get("content"), list):
                return [
                    b for b in message["content"] if isinstance(b, dict) and b.get("type") == "tool_result"
                ]
        return []

    def last_result_text(self) -> str:
        """The text of the last tool result (joined, when it has several parts)."""
        results = self.tool_results()
        if not results:
            return ""
        content = results[-1].get("content")
        if isinstance(content, str):
            return content
        return "".join(str(part.get("text", "")) for part in content or () if isinstance(part, dict))

    def last_user_text(self) -> str:
        """The plain text of the last user message (a prompt, or a hook's words sent back)."""
        for message in reversed(self.messages):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(
                str(b.get("text", ""))
                for b in content or ()
                if isinstance(b, dict) and b.get("type") == "text"
            )
        return ""


@dataclass
class _State:
    script: list[Step] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    played: list[Request] = field(default_factory=list)  # the requests that took a turn
    unscripted: int = 0
    errors: list[str] = field(default_factory=list)


class ScriptedModel:
    """The server; `play(...)` sets the turns for the next conversation."""

    def __init__(self) -> None:
        self._state = _State()
        self._changed = threading.Condition()
        self._ids = itertools.count(1)
        self._last_turn: Turn | None = None  # what the latest scripted request was answered
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                outer._answer(self)

            def do_GET(self) -> None:
                outer._answer(self)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def play(self, *steps: Step) -> None:
        """The turns for the next requests (after the ones not yet played)."""
        with self._changed:
            self._state.script.extend(steps)

    @property
    def requests(self) -> list[Request]:
        with self._changed:
            return list(self._state.requests)

    @property
    def played(self) -> list[Request]:
        """The requests for the conversation's model, each of which took a turn (or the closing text)."""
        with self._changed:
            return list(self._state.played)

    @property
    def unscripted(self) -> int:
        with self._changed:
            return self._state.unscripted

    @property
    def left(self) -> int:
        with self._changed:
            return len(self._state.script)

    @property
    def errors(self) -> list[str]:
        with self._changed:
            return list(self._state.errors)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- answering ----------------------------------------------------------------
    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"unreadable": raw.decode("utf-8", "replace")}
        request = Request(
            handler.command,
            handler.path,
            {k.lower(): v for k, v in handler.headers.items()},
            body if isinstance(body, dict) else {"body": body},
        )
        path = handler.path.split("?", 1)[0]
        with self._changed:
            self._state.requests.append(request)
            self._changed.notify_all()
        if path == "/v1/messages/count_tokens":
            _json(handler, {"input_tokens": max(1, len(raw) // 4)})
            return
        if path != "/v1/messages" or handler.command != "POST":
            _json(handler, {"type": "error", "error": {"type": "not_found_error", "message": path}}, 404)
            return
        turn = self._turn_for(request)
        if request.body.get("stream"):
            _stream(handler, request, turn, next(self._ids))
        else:
            _json(handler, _message(request, turn, next(self._ids)))

    def _turn_for(self, request: Request) -> Turn:
        if request.body.get("model") != MODEL:
            return say("ok")  # a side request (a title, a summary for another model): no turn
        with self._changed:
            last = self._state.played[-1] if self._state.played else None
            if last is not None and last.body == request.body and self._last_turn is not None:
                return self._last_turn  # the harness retrying a slow answer: the same answer again
            step = self._state.script.pop(0) if self._state.script else None
            if step is None:
                self._state.unscripted += 1
            self._state.played.append(request)
            self._changed.notify_all()
        self._last_turn = self._played_turn(step, request)
        return self._last_turn

    def _played_turn(self, step: Step | None, request: Request) -> Turn:
        if step is None:
            return say(CLOSING)
        if isinstance(step, Turn):
            return step
        try:
            return step(request)
        except Exception as exc:  # a script's mistake: said in the test's failure, not a hung session
            with self._changed:
                self._state.errors.append(f"{type(exc).__name__}: {exc}")
            return say(CLOSING)

    def wait_until(self, condition: Callable[[list[Request]], bool], timeout: float = 60.0) -> None:
        """Block until `condition(requests)` holds (woken on each request), at most `timeout`."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition(self._state.requests):
                left = deadline - time.monotonic()
                assert left > 0, f"not seen within {timeout}s in {len(self._state.requests)} requests"
                self._changed.wait(left)


def _json(handler: BaseHTTPRequestHandler, value: Any, status: int = 200) -> None:
    data = json.dumps(value).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def _ids(blocks: Sequence[Block], number: int) -> list[tuple[Block, str]]:
    return [(block, f"toolu_{number:04d}_{index}") for index, block in enumerate(blocks)]


def _stop_reason(turn: Turn) -> str:
    return "tool_use" if any(isinstance(b, ToolUse) for b in turn.blocks) else "end_turn"


def _message(request: Request, turn: Turn, number: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for block, block_id in _ids(turn.blocks, number):
        if isinstance(block, Text):
            content.append({"type": "text", "text": block.text})
        else:
            content.append({"type": "tool_use", "id": block_id, "name": block.name, "input": block.input})
    return {
        "id": f"msg_{number:04d}",
        "type": "message",
        "role": "assistant",
        "model": request.body.get("model", MODEL),
        "content": content,
        "stop_reason": _stop_reason(turn),
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def _events(request: Request, turn: Turn, number: int) -> Iterable[tuple[str, dict[str, Any]]]:
    start = {**_message(request, turn, number), "content": [], "stop_reason": None}
    yield "message_start", {"type": "message_start", "message": start}
    for index, (block, block_id) in enumerate(_ids(turn.blocks, number)):
        if isinstance(block, Text):
            opened: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block.text}]
        else:
            opened = {"type": "tool_use", "id": block_id, "name": block.name, "input": {}}
            whole = json.dumps(block.input)
            half = len(whole) // 2  # in two pieces, as a model streams it
            deltas = [
                {"type": "input_json_delta", "partial_json": part} for part in (whole[:half], whole[half:])
            ]
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": opened}
        for delta in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(turn), "stop_sequence": None},
            "usage": {"output_tokens": 10},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _stream(handler: BaseHTTPRequestHandler, request: Request, turn: Turn, number: int) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Connection", "close")
    handler.end_headers()
    handler.close_connection = True
    for name, data in _events(request, turn, number):
        handler.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
    handler.wfile.flush()
