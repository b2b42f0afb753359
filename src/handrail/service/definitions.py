"""The catalog's tools, declared once (service/tool_table.py says what a declaration
holds), and the published list of every tool made from the declarations.

Input schemas are exactly as strict as the seed's (patterns, lengths, no extra
properties); arguments are checked by validators compiled once from them.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from handrail._resources import resource
from handrail.service.identifiers import ID
from handrail.service.portable_schema import portable
from handrail.service.run_definitions import RUN_TOOLS
from handrail.service.tool_table import READ_ONLY, Schema, Tool, markdown_table, published

SUMMARY = {
    "type": "object",
    "properties": {k: {"type": "string"} for k in ("id", "name", "description", "category", "version")},
    "required": ["id", "name", "description", "category", "version"],
}
DIAGNOSTIC = {
    "type": "object",
    "properties": {
        "file": {"type": "string"},
        "line": {"type": "integer"},
        "column": {"type": "integer"},
        "pointer": {"type": "string"},
        "severity": {"enum": ["error", "warning"]},
        "code": {"type": "string"},
        "message": {"type": "string"},
        "hint": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["file", "line", "column", "pointer", "severity", "code", "message", "hint"],
}
STATE = {
    "type": "object",
    "description": "Loop progress: send back the `state` of the previous workflow_next result unchanged.",
    "properties": {
        "loops": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "iteration": {"type": "integer", "minimum": 1},
                },
                "required": ["id", "iteration"],
                "additionalProperties": False,
            },
        }
    },
    "additionalProperties": False,
}
# the engine checks `state` itself, so a tampered state is -32005 saying what is wrong
LOOSE_STATE = {"type": "object", "description": STATE["description"]}
CONTEXT = {
    "type": "object",
    "description": "Context variables that step conditions and context-aware rules read, "
    'e.g. {"taskScope": "large", "complexity": 0.8}.',
    "additionalProperties": True,
}
NO_ARGUMENTS: Schema = {}


@cache
def workflow_schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(resource("spec", "workflow.schema.json").read_text("utf-8"))
    return loaded


def _workflow_document() -> dict[str, Any]:
    """The schema workflow files follow, published in the portable form (it has type lists)."""
    document: dict[str, Any] = portable(
        {k: v for k, v in workflow_schema().items() if k not in ("$schema", "$id")}
    )
    return document


CATALOG_TOOLS: tuple[Tool, ...] = (
    Tool(
        name="workflow_list",
        title="List workflows",
        summary="the workflows (id, name, description, category, version) and any files that failed to load",
        description="Lists all available workflows (id, name, description, category, version), "
        "plus any workflow files that failed to load.",
        arguments=NO_ARGUMENTS,
        required=(),
        output={
            "type": "object",
            "properties": {
                "workflows": {"type": "array", "items": SUMMARY},
                "diagnostics": {"type": "array", "items": DIAGNOSTIC},
            },
            "required": ["workflows"],
        },
        annotations=READ_ONLY,
        example={},
        answer={
            "workflows": [
                {
                    "id": "coding-task",
                    "name": "Coding Task",
                    "description": "Plan, implement part by part, verify.",
                    "category": "development",
                    "version": "1.0.0",
                }
            ]
        },
        handler="workflow_list",
        runs_only=True,
    ),
    Tool(
        name="workflow_get",
        title="Get a workflow",
        summary="one workflow's full definition",
        description="Retrieves a workflow definition by id: every step, condition and rule.",
        arguments={"id": {**ID, "description": "The workflow ID to retrieve"}},
        required=("id",),
        output=_workflow_document,
        annotations=READ_ONLY,
        example={"id": "coding-task"},
        answer={
            "id": "coding-task",
            "name": "Coding Task",
            "description": "...",
            "version": "1.0.0",
            "steps": [{"id": "plan", "title": "Plan", "prompt": "..."}],
        },
        handler="workflow_get",
    ),
    Tool(
        name="workflow_next",
        title="Next step",
        summary="the next step for `completedSteps` and `context`, with composed guidance; "
        "`step: null, isComplete: true` at the end",
        description="Gets the next step of a workflow given the steps already completed and the "
        "context. Start with completedSteps []. After doing the step, call again with the "
        "result's completedSteps plus the step's id, the result's state, and your context.",
        arguments={
            "workflowId": {**ID, "description": "The workflow ID"},
            "currentStep": {**ID, "description": "Current step ID (optional)"},
            "completedSteps": {
                "type": "array",
                "description": "Array of completed step IDs",
                "items": {"type": "string", "pattern": "^[a-z0-9-]+$"},
                "uniqueItems": True,
            },
            "context": CONTEXT,
            "state": LOOSE_STATE,
        },
        required=("workflowId", "completedSteps"),
        output={
            "type": "object",
            "properties": {
                "step": {"anyOf": [{"type": "object"}, {"type": "null"}]},
                "guidance": {"type": "object"},
                "isComplete": {"type": "boolean"},
                "completedSteps": {"type": "array", "items": {"type": "string"}},
                "state": STATE,
                "loop": {"type": "object"},
            },
            "required": ["step", "guidance", "isComplete"],
        },
        annotations=READ_ONLY,
        example={"workflowId": "coding-task", "completedSteps": [], "context": {"taskId": "TASK-123"}},
        answer={
            "step": {
                "id": "understand",
                "title": "Understand the task",
                "prompt": "Analyze the requirements...",
            },
            "guidance": {"prompt": "...", "requiresConfirmation": False, "validationCriteria": []},
            "isComplete": False,
            "completedSteps": [],
            "state": {"loops": []},
        },
        handler="workflow_next",
    ),
    Tool(
        name="workflow_validate",
        title="Validate a step's output",
        summary="checks a step's output against its rules: `{valid, issues, suggestions}`",
        description="Validates a step's output against that step's validation rules; "
        "pass the context for rules that depend on it.",
        arguments={
            "workflowId": {**ID, "description": "The workflow ID"},
            "stepId": {**ID, "description": "The step ID to validate"},
            "output": {"type": "string", "description": "The step output to validate", "minLength": 1},
            "context": CONTEXT,
        },
        required=("workflowId", "stepId", "output"),
        output={
            "type": "object",
            "properties": {
                "valid": {"type": "boolean"},
                "issues": {"type": "array", "items": {"type": "string"}},
                "suggestions": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["valid"],
        },
        annotations=READ_ONLY,
        example={
            "workflowId": "coding-task",
            "stepId": "understand",
            "output": "I have analyzed the requirements.",
        },
        answer={"valid": True, "issues": [], "suggestions": []},
        handler="workflow_validate",
    ),
    Tool(
        name="workflow_validate_json",
        title="Check a workflow definition",
        summary="checks a workflow given as JSON text, as `handrail check` does",
        description="Checks a workflow given as JSON text, as `handrail check` does: every "
        "problem with line, column, JSON pointer and a fix hint.",
        arguments={
            "workflow": {"type": "string", "minLength": 1, "description": "The workflow, as JSON text"}
        },
        required=("workflow",),
        output={
            "type": "object",
            "properties": {
                "valid": {"type": "boolean"},
                "diagnostics": {"type": "array", "items": DIAGNOSTIC},
            },
            "required": ["valid", "diagnostics"],
        },
        annotations=READ_ONLY,
        example={"workflow": '{"id": "x"}'},
        answer={"valid": False, "diagnostics": []},
        handler="workflow_validate_json",
    ),
    Tool(
        name="workflow_get_schema",
        title="Get the workflow schema",
        summary="the JSON Schema of workflow files",
        description="Returns the JSON Schema that workflow files follow.",
        arguments=NO_ARGUMENTS,
        required=(),
        output={"type": "object"},
        annotations=READ_ONLY,
        example={},
        answer={"$id": "https://handrail.dev/schemas/workflow/v1.json"},
        handler="workflow_get_schema",
    ),
)
TABLE: tuple[Tool, ...] = (*CATALOG_TOOLS, *RUN_TOOLS)
# what `--runs-only` still offers: listing workflows, and the run tools
RUNS_ONLY_TOOLS = frozenset(t.name for t in TABLE if t.runs_only)


@cache
def tools() -> tuple[dict[str, Any], ...]:
    """What tools/list offers, made from the declarations."""
    return tuple(published(t) for t in TABLE)


@cache
def tool_names() -> tuple[str, ...]:
    return tuple(t.name for t in TABLE)


def docs_table() -> str:
    """The README's table of tools, made from the declarations (tests/service/test_tool_table.py
    checks the README holds it)."""
    return markdown_table(TABLE)


if __name__ == "__main__":  # python -m handrail.service.definitions: the table to paste
    print(docs_table(), end="")
