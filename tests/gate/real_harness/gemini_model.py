"""A scripted Gemini API on 127.0.0.1, for Gemini CLI: `POST
/v1beta/models/{model}:streamGenerateContent?alt=sse` (and `:generateContent`)
answered from the script, `:countTokens` with a count.

A turn returns the parts of one model reply: `say(text)` for text, `call(name, args)`
for a functionCall. The agent's turns are the requests that offer tools; Gemini CLI's
side requests (routing, the next-speaker check, a compression's summary) offer none
and are answered outside the script: a JSON request gets `{}` (its schema's fields
left out, which Gemini CLI reads as "nothing to do"), any other a short summary.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from tests.gate.real_harness.scripted_sse import Reply, Request, ScriptedModel, sse

SUMMARY = "<state_snapshot>The agent works a handrail run.</state_snapshot>"
USAGE = {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}
FILLED = 1_000_000  # most of any Gemini model's window: Gemini CLI compresses before the next request


class Filling(NamedTuple):
    """A turn whose usage fills the context window."""

    part: dict[str, Any]


def say(text: str) -> dict[str, Any]:
    return {"text": text}


def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": args}}


class GeminiModel(ScriptedModel):
    def is_turn(self, request: Request) -> bool:
        return (
            request.method == "POST"
            and "generatecontent" in request.path.lower()
            and isinstance(request.body, dict)
            and bool(request.body.get("tools"))
        )

    def reply(self, request: Request, value: Any) -> Reply:
        usage = USAGE
        if isinstance(value, Filling):
            value, usage = value.part, dict(USAGE, promptTokenCount=FILLED, totalTokenCount=FILLED + 10)
        parts = value if isinstance(value, list) else [value]
        return self._content(request, parts, usage)

    def _content(self, request: Request, parts: list[dict[str, Any]], usage: dict[str, int] = USAGE) -> Reply:
        body = {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": usage,
            "modelVersion": "gemini-test",
        }
        if ":streamGenerateContent" in request.path:
            return Reply(200, "text/event-stream", sse([(None, body)]))
        return Reply(200, "application/json", [json.dumps(body).encode()])

    def side(self, request: Request) -> Reply:
        if ":countTokens" in request.path:
            return Reply(200, "application/json", [json.dumps({"totalTokens": 100}).encode()])
        if "generatecontent" in request.path.lower() and isinstance(request.body, dict):
            config = request.body.get("generationConfig") or request.body.get("config") or {}
            wants_json = config.get("responseMimeType") == "application/json"
            return self._content(request, [say("{}" if wants_json else SUMMARY)])
        return Reply(404, "application/json", [b'{"error": {"code": 404, "message": "not scripted"}}'])


def texts(request: Request) -> str:
    """Every text a request's contents hold (prompts, function responses), one a line."""
    found: list[str] = []
    for content in request.body.get("contents", []):
        for part in content.get("parts", []):
            if "text" in part:
                found.append(str(part["text"]))
            if "functionResponse" in part:
                found.append(json.dumps(part["functionResponse"].get("response"), ensure_ascii=False))
    return "\n".join(found)


def responses(request: Request) -> list[dict[str, Any]]:
    """The functionResponse parts of a request, in order."""
    return [
        part["functionResponse"]
        for content in request.body.get("contents", [])
        for part in content.get("parts", [])
        if "functionResponse" in part
    ]
