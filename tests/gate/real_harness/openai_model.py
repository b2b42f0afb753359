"""A scripted OpenAI Responses API on 127.0.0.1, for Codex CLI: `POST /v1/responses`
answered as a stream of server-sent events (response.created, one
response.output_item.added and .done per item, response.completed with usage).

A turn returns the output items of one response: `say(text)` for the model's message,
`call(name, arguments)` for a function call, `custom` for a freeform tool call
(apply_patch), `search` for a tool_search call; `Filling(item)` reports a usage that
fills the context, so Codex compacts the conversation after it. Every request is
recorded. Codex's compaction request (its prompt set to `COMPACT_PROMPT` in the
config) is answered with a summary, outside the script.
"""

from __future__ import annotations

import itertools
import json
from typing import Any, NamedTuple

from tests.gate.real_harness.scripted_sse import Reply, Request, ScriptedModel, sse

USAGE = {
    "input_tokens": 100,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 10,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 110,
}
FILLED = 1_000_000  # more than any auto-compact limit the tests set
COMPACT_PROMPT = "handrail-tests: summarize the conversation so far."
SUMMARY = "Summary: the agent works a handrail run."
_ids = itertools.count(1)


class Filling(NamedTuple):
    item: dict[str, Any]


def say(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "id": f"msg_{next(_ids)}",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def call(name: str, arguments: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    item = {
        "type": "function_call",
        "id": f"fc_{next(_ids)}",
        "call_id": f"call_{next(_ids)}",
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }
    if namespace:
        item["namespace"] = namespace
    return item


class ResponsesModel(ScriptedModel):
    def is_turn(self, request: Request) -> bool:
        return (
            request.method == "POST"
            and request.path.endswith("/responses")
            and isinstance(request.body, dict)
            and not is_compaction(request)
        )

    def reply(self, request: Request, value: Any) -> Reply:
        usage = USAGE
        if isinstance(value, Filling):
            value, usage = value.item, dict(USAGE, input_tokens=FILLED, total_tokens=FILLED + 10)
        items = value if isinstance(value, list) else [value]
        rid = f"resp_{next(_ids)}"
        events: list[tuple[str | None, Any]] = [
            (
                "response.created",
                {"type": "response.created", "response": {"id": rid, "status": "in_progress"}},
            )
        ]
        for index, item in enumerate(items):
            for kind in ("response.output_item.added", "response.output_item.done"):
                events.append((kind, {"type": kind, "output_index": index, "item": item}))
        done = {"id": rid, "status": "completed", "output": items, "usage": usage}
        events.append(("response.completed", {"type": "response.completed", "response": done}))
        return Reply(200, "text/event-stream", sse(events))

    def side(self, request: Request) -> Reply:
        if is_compaction(request):
            return self.reply(request, say(SUMMARY))
        if request.path.endswith("/models"):
            return Reply(200, "application/json", [json.dumps({"data": [], "models": []}).encode()])
        return Reply(404, "application/json", [b'{"error": {"message": "not scripted"}}'])


def texts(request: Request) -> str:
    """Every text a request's input holds (messages, tool outputs), one a line."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key in ("text", "output", "content"):
                walk(value.get(key))

    walk(request.body.get("input", []))
    return "\n".join(found)


def is_compaction(request: Request) -> bool:
    return isinstance(request.body, dict) and texts(request).rstrip().endswith(COMPACT_PROMPT)


def outputs(request: Request) -> dict[str, str]:
    """The function-call outputs a request carries, by call id."""
    found: dict[str, str] = {}
    for item in request.body.get("input", []):
        if isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            found[str(item.get("call_id"))] = output if isinstance(output, str) else json.dumps(output)
    return found


def custom(name: str, text: str) -> dict[str, Any]:
    """A freeform tool call (Codex's apply_patch takes the patch as plain text)."""
    return {
        "type": "custom_tool_call",
        "id": f"ctc_{next(_ids)}",
        "call_id": f"call_{next(_ids)}",
        "name": name,
        "input": text,
        "status": "completed",
    }


def search(query: str) -> dict[str, Any]:
    """A tool_search call: Codex answers it with the deferred tools that match (its MCP tools)."""
    return {
        "type": "tool_search_call",
        "id": f"ts_{next(_ids)}",
        "call_id": f"call_{next(_ids)}",
        "execution": "client",
        "status": "completed",
        "arguments": {"query": query},
    }
