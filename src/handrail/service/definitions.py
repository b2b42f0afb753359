"""The published tools: names, descriptions, input and output schemas, examples.

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
from handrail.service.run_definitions import run_tools

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
CONTEXT = {
    "type": "object",
    "description": "Context variables that step conditions and context-aware rules read, "
    'e.g. {"taskScope": "large", "complexity": 0.8}.',
    "additionalProperties": True,
}


@cache
def workflow_schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(resource("spec", "workflow.schema.json").read_text("utf-8"))
    return loaded


def _tools() -> list[dict[str, Any]]:
    readonly = {
        "readOnlyHint": True,
        "idempotentHint": True,
        "openWorldHint": False,
        "destructiveHint": False,
    }
    # the schema workflow files follow, published in the portable form (it has type lists)
    schema_out = portable({k: v for k, v in workflow_schema().items() if k not in ("$schema", "$id")})
    return [
        {
            "name": "workflow_list",
            "title": "List workflows",
            "description": "Lists all available workflows (id, name, description, category, version), "
            "plus any workflow files that failed to load.",
            "inputSchema": {
                "type": "object",
                "properties": {},
                "required": [],
                "additionalProperties": False,
            },
            "outputSchema": {
                "type": "object",
                "properties": {
                    "workflows": {"type": "array", "items": SUMMARY},
                    "diagnostics": {"type": "array", "items": DIAGNOSTIC},
                },
                "required": ["workflows"],
            },
            "annotations": readonly,
            "examples": {
                "request": {"method": "workflow_list", "params": {}},
                "response": {
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
            },
        },
        {
            "name": "workflow_get",
            "title": "Get a workflow",
            "description": "Retrieves a workflow definition by id: every step, condition and rule.",
            "inputSchema": {
                "type": "object",
                "properties": {"id": {**ID, "description": "The workflow ID to retrieve"}},
                "required": ["id"],
                "additionalProperties": False,
            },
            "outputSchema": schema_out,
            "annotations": readonly,
            "examples": {
                "request": {"method": "workflow_get", "params": {"id": "coding-task"}},
                "response": {
                    "id": "coding-task",
                    "name": "Coding Task",
                    "description": "...",
                    "version": "1.0.0",
                    "steps": [{"id": "plan", "title": "Plan", "prompt": "..."}],
                },
            },
        },
        {
            "name": "workflow_next",
            "title": "Next step",
            "description": "Gets the next step of a workflow given the steps already completed and the "
            "context. Start with completedSteps []. After doing the step, call again with the "
            "result's completedSteps plus the step's id, the result's state, and your context.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "workflowId": {**ID, "description": "The workflow ID"},
                    "currentStep": {**ID, "description": "Current step ID (optional)"},
                    "completedSteps": {
                        "type": "array",
                        "description": "Array of completed step IDs",
                        "items": {"type": "string", "pattern": "^[a-z0-9-]+$"},
                        "uniqueItems": True,
                    },
                    "context": CONTEXT,
                    "state": STATE,
                },
                "required": ["workflowId", "completedSteps"],
                "additionalProperties": False,
            },
            "outputSchema": {
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
            "annotations": readonly,
            "examples": {
                "request": {
                    "method": "workflow_next",
                    "params": {
                        "workflowId": "coding-task",
                        "completedSteps": [],
                        "context": {"taskId": "TASK-123"},
                    },
                },
                "response": {
                    "step": {
                        "id": "understand",
                        "title": "Understand the task",
                        "prompt": "Analyze the requirements...",
                    },
                    "guidance": {
                        "prompt": "...",
                        "requiresConfirmation": False,
                        "validationCriteria": [],
                    },
                    "isComplete": False,
                    "completedSteps": [],
                    "state": {"loops": []},
                },
            },
        },
        {
            "name": "workflow_validate",
            "title": "Validate a step's output",
            "description": "Validates a step's output against that step's validation rules; "
            "pass the context for rules that depend on it.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "workflowId": {**ID, "description": "The workflow ID"},
                    "stepId": {**ID, "description": "The step ID to validate"},
                    "output": {
                        "type": "string",
                        "description": "The step output to validate",
                        "minLength": 1,
                    },
                    "context": CONTEXT,
                },
                "required": ["workflowId", "stepId", "output"],
                "additionalProperties": False,
            },
            "outputSchema": {
                "type": "object",
                "properties": {
                    "valid": {"type": "boolean"},
                    "issues": {"type": "array", "items": {"type": "string"}},
                    "suggestions": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["valid"],
            },
            "annotations": readonly,
            "examples": {
                "request": {
                    "method": "workflow_validate",
                    "params": {
                        "workflowId": "coding-task",
                        "stepId": "understand",
                        "output": "I have analyzed the requirements.",
                    },
                },
                "response": {"valid": True, "issues": [], "suggestions": []},
            },
        },
        {
            "name": "workflow_validate_json",
            "title": "Check a workflow definition",
            "description": "Checks a workflow given as JSON text, as `handrail check` does: every "
            "problem with line, column, JSON pointer and a fix hint.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "workflow": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The workflow, as JSON text",
                    }
                },
                "required": ["workflow"],
                "additionalProperties": False,
            },
            "outputSchema": {
                "type": "object",
                "properties": {
                    "valid": {"type": "boolean"},
                    "diagnostics": {"type": "array", "items": DIAGNOSTIC},
                },
                "required": ["valid", "diagnostics"],
            },
            "annotations": readonly,
            "examples": {
                "request": {
                    "method": "workflow_validate_json",
                    "params": {"workflow": '{"id": "x"}'},
                },
                "response": {"valid": False, "diagnostics": []},
            },
        },
        {
            "name": "workflow_get_schema",
            "title": "Get the workflow schema",
            "description": "Returns the JSON Schema that workflow files follow.",
            "inputSchema": {
                "type": "object",
                "properties": {},
                "required": [],
                "additionalProperties": False,
            },
            "outputSchema": {"type": "object"},
            "annotations": readonly,
            "examples": {
                "request": {"method": "workflow_get_schema", "params": {}},
                "response": {"$id": "https://handrail.dev/schemas/workflow/v1.json"},
            },
        },
    ]


TOOL_ERROR = {
    "type": "object",
    "description": "A failed call (isError: true): the JSON-RPC code, message and data.",
    "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "data": {"type": "object"}},
    "required": ["code", "message"],
    "additionalProperties": False,
}


def _or_error(schema: dict[str, Any]) -> dict[str, Any]:
    """An output schema that also admits the structured error of a failed call, so clients
    that check structuredContent even on isError results accept our errors."""
    success = {k: v for k, v in schema.items() if k != "definitions"}
    wrapped: dict[str, Any] = {"type": "object", "anyOf": [success, TOOL_ERROR]}
    if "definitions" in schema:
        wrapped["definitions"] = schema["definitions"]  # internal $refs still resolve from the root
    return wrapped


def _loose_state(tool: dict[str, Any]) -> dict[str, Any]:
    """The engine checks `state` itself, so a tampered state is -32005 saying what is wrong."""
    properties = tool["inputSchema"]["properties"]
    if "state" in properties:
        properties["state"] = {"type": "object", "description": STATE["description"]}
    return tool


@cache
def tools() -> tuple[dict[str, Any], ...]:
    return tuple(
        _loose_state({**t, "outputSchema": portable(_or_error(t["outputSchema"]))})
        for t in [*_tools(), *run_tools()]
    )


@cache
def tool_names() -> tuple[str, ...]:
    return tuple(t["name"] for t in tools())
