"""What a published tool is, declared once: `Tool` holds its name, title, description,
arguments, result, hints, example and handler; `published` turns it into the entry
tools/list sends, and `markdown_table` into the docs' table of tools.

The declarations themselves are in service/definitions.py (the catalog's tools) and
service/run_definitions.py (the run tools)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from handrail.service.portable_schema import portable

Schema = Mapping[str, Any]

READ_ONLY: Schema = {
    "readOnlyHint": True,
    "idempotentHint": True,
    "openWorldHint": False,
    "destructiveHint": False,
}
WRITES: Schema = {
    "readOnlyHint": False,
    "idempotentHint": False,
    "openWorldHint": False,
    "destructiveHint": False,
}
TOOL_ERROR: Schema = {
    "type": "object",
    "description": "A failed call (isError: true): the JSON-RPC code, message and data.",
    "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "data": {"type": "object"}},
    "required": ["code", "message"],
    "additionalProperties": False,
}


class Tool(NamedTuple):
    """One tool, immutable (a NamedTuple: the server loads this at start-up, and
    dataclasses would bring `inspect` with them). `handler`: the name of the `Service`
    method that answers it, or, with `runs`, of the run handler (runs/handlers.py) that
    does, which also reads the request. `output` is a schema, or a function giving it
    (read on first use). `runs_only`: still offered with `--runs-only`."""

    name: str
    title: str
    summary: str  # the docs' table's line
    description: str
    arguments: Schema  # name -> schema, in the order published
    required: tuple[str, ...]
    output: Schema | Callable[[], Schema]
    annotations: Schema
    example: Schema  # the request's params
    answer: Schema  # what the example request is answered
    handler: str
    runs: bool = False
    runs_only: bool = False

    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {name: dict(schema) for name, schema in self.arguments.items()},
            "required": list(self.required),
            "additionalProperties": False,
        }

    def output_schema(self) -> dict[str, Any]:
        schema = self.output() if callable(self.output) else self.output
        return dict(schema)


def or_error(schema: Schema) -> dict[str, Any]:
    """An output schema that also admits the structured error of a failed call, so clients
    that check structuredContent even on isError results accept our errors."""
    success = {k: v for k, v in schema.items() if k != "definitions"}
    wrapped: dict[str, Any] = {"type": "object", "anyOf": [success, TOOL_ERROR]}
    if "definitions" in schema:
        wrapped["definitions"] = schema["definitions"]  # internal $refs still resolve from the root
    return wrapped


def published(tool: Tool) -> dict[str, Any]:
    """The entry tools/list sends for `tool`, in the form strict clients accept."""
    return {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": tool.input_schema(),
        "outputSchema": portable(or_error(tool.output_schema())),
        "annotations": dict(tool.annotations),
        "examples": {
            "request": {"method": tool.name, "params": dict(tool.example)},
            "response": dict(tool.answer),
        },
    }


def markdown_table(table: tuple[Tool, ...]) -> str:
    """The docs' table of tools (README.md, "What an agent sees"), one row a tool."""
    rows = ["| tool | does |", "|---|---|"]
    rows += [f"| `{t.name}` | {t.summary} |" for t in table]
    return "\n".join(rows) + "\n"
