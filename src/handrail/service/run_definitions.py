"""The run tools, declared once: workflow_start, workflow_continue, workflow_resume,
workflow_abandon, workflow_claim (see spec/runs.md). Kept apart from the catalog's
tools; `definitions.tools()` publishes both."""

from __future__ import annotations

from typing import Any

from handrail.service.identifiers import ID, RUN_ID, STEP_ID
from handrail.service.tool_table import WRITES, Tool

WORKSPACE = {
    "type": "string",
    "minLength": 1,
    "maxLength": 4096,
    "description": "An absolute folder the run works in (default: your first MCP root, "
    "else the server's working folder)",
}
CONTEXT = {
    "type": "object",
    "description": "Context variables merged into the run's context first (a key set to null is "
    'removed), e.g. {"taskScope": "large"}.',
    "additionalProperties": True,
}
LEASE = {
    "type": "string",
    "minLength": 1,
    "maxLength": 200,
    "description": "On a branch you claimed: the lease token workflow_claim gave (lease.token). It "
    "shows you hold the branch on any server replica, with or without a session",
}
STATUS = {"enum": ["active", "awaiting_approval", "completed", "abandoned"]}
PROGRESS = {
    "type": "object",
    "properties": {"completed": {"type": "integer", "minimum": 0}},
    "required": ["completed"],
}
STEP_AT = {
    "step": {"anyOf": [{"type": "object"}, {"type": "null"}]},
    "guidance": {"type": "object"},
    "isComplete": {"type": "boolean"},
    "loop": {"type": "object"},
    "progress": PROGRESS,
}
RUN_SUMMARY = {
    "type": "object",
    "properties": {
        "runId": {"type": "string"},
        "workflowId": {"type": "string"},
        "goal": {"type": "string"},
        "status": STATUS,
        "currentStep": {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"id": {"type": "string"}, "title": {"type": "string"}},
                },
                {"type": "null"},
            ],
        },
        "updatedAt": {"type": "string"},
        "workspace": {"type": "string"},
    },
    "required": ["runId", "workflowId", "goal", "status", "currentStep", "updatedAt", "workspace"],
}
EXAMPLE_RUN = "run_4f1c2e9a0b7d4c3e8f6a5b4c3d2e1f00"


def _example_step(step_id: str, title: str, *, completed: int) -> dict[str, Any]:
    """The step part of an example answer."""
    return {
        "step": {"id": step_id, "title": title, "prompt": "..."},
        "guidance": {"prompt": "...", "requiresConfirmation": False, "validationCriteria": []},
        "isComplete": False,
        "progress": {"completed": completed},
    }


RECAP_ENTRY = {
    "type": "object",
    "properties": {"stepId": {"type": "string"}, "title": {"type": "string"}, "summary": {"type": "string"}},
    "required": ["stepId", "title", "summary"],
}
CLAIM_OUTPUT = {
    "type": "object",
    "properties": {
        "claimed": {"type": "boolean"},
        "runId": {"type": "string"},
        "status": STATUS,
        "workflowId": {"type": "string"},
        "goal": {"type": "string"},
        "workspace": {"type": "string"},
        "parentId": {"type": "string"},
        "parentStep": {"type": "string"},
        "branch": {"type": "integer", "minimum": 0},
        "item": {},
        "leaseUntil": {"type": "string"},
        "lease": {
            "type": "object",
            "properties": {"token": {"type": "string"}, "until": {"type": "string"}},
            "required": ["token", "until"],
        },
        **STEP_AT,
        "message": {"type": "string"},
        "branches": {"type": "object"},
    },
    "required": ["claimed"],
}


RUN_TOOLS: tuple[Tool, ...] = (
    Tool(
        name="workflow_start",
        title="Start a run",
        summary="starts a run: the server keeps its progress; the first step comes back",
        description="Starts a run of a workflow: the server keeps its progress and returns the "
        "first step. Do the step, then send its output with workflow_continue.",
        arguments={
            "workflowId": {**ID, "description": "The workflow ID (see workflow_list)"},
            "goal": {
                "type": "string",
                "minLength": 1,
                "maxLength": 2000,
                "description": "What the run is for, in a sentence or two",
            },
            "workspace": WORKSPACE,
            "context": CONTEXT,
        },
        required=("workflowId", "goal"),
        output={
            "type": "object",
            "properties": {
                "runId": {"type": "string"},
                "status": STATUS,
                "workflowId": {"type": "string"},
                "workflowVersion": {"type": "string"},
                "goal": {"type": "string"},
                **STEP_AT,
            },
            "required": ["runId", "status", "workflowId", "workflowVersion", "goal", "step", "guidance"],
        },
        annotations=WRITES,
        example={"workflowId": "coding-task", "goal": "Add a --verbose flag"},
        answer={
            "runId": EXAMPLE_RUN,
            "status": "active",
            "workflowId": "coding-task",
            "workflowVersion": "1.0.0",
            "goal": "Add a --verbose flag",
            **_example_step("understand", "Understand the task", completed=0),
        },
        handler="workflow_start",
        runs=True,
        runs_only=True,
    ),
    Tool(
        name="workflow_continue",
        title="Submit a step's output",
        summary="sends the current step's output: the next step when its rules pass, "
        "the issues to fix when they fail",
        description="Sends the output of the run's current step. The step's rules run on it: "
        "when they pass the step is done and the next one comes back (accepted: true); when they "
        "fail the run stays on the step and the issues say what to fix. `context` is merged into "
        "the run's context first; send only `context` (no stepId, no output) to set what a "
        "blocked run waits for.",
        arguments={
            "runId": RUN_ID,
            "stepId": {**STEP_ID, "description": "The id of the run's current step"},
            "output": {"type": "string", "minLength": 1, "description": "What you produced for the step"},
            "context": CONTEXT,
            "lease": LEASE,
        },
        required=("runId",),
        output={
            "type": "object",
            "properties": {
                "runId": {"type": "string"},
                "accepted": {"type": "boolean"},
                "status": STATUS,
                "issues": {"type": "array", "items": {"type": "string"}},
                "suggestions": {"type": "array", "items": {"type": "string"}},
                **STEP_AT,
            },
            "required": ["runId", "accepted", "status", "step", "guidance"],
        },
        annotations=WRITES,
        example={
            "runId": EXAMPLE_RUN,
            "stepId": "understand",
            "output": "The task is to add a --verbose flag to the CLI ...",
        },
        answer={
            "runId": EXAMPLE_RUN,
            "accepted": True,
            "status": "active",
            **_example_step("plan", "Plan", completed=1),
        },
        handler="workflow_continue",
        runs=True,
        runs_only=True,
    ),
    Tool(
        name="workflow_resume",
        title="Resume a run",
        summary="without `runId`, the open runs of a workspace; with it, where the run stands "
        "and a recap of each accepted step",
        description="Without runId: the open runs of a workspace, most recently updated first. "
        "With runId: the run where it stands (current step, context, and a recap of every "
        "accepted step), enough to carry on in a fresh conversation.",
        arguments={"runId": RUN_ID, "workspace": WORKSPACE, "lease": LEASE},
        required=(),
        output={
            "type": "object",
            "properties": {
                "runs": {"type": "array", "items": RUN_SUMMARY},
                "runId": {"type": "string"},
                "status": STATUS,
                "workflowId": {"type": "string"},
                "workflowVersion": {"type": "string"},
                "goal": {"type": "string"},
                "workspace": {"type": "string"},
                **STEP_AT,
                "context": {"type": "object"},
                "recap": {"type": "array", "items": RECAP_ENTRY},
                "newerVersion": {"type": "object"},
            },
        },
        annotations={**WRITES, "readOnlyHint": True, "idempotentHint": True},
        example={},
        answer={
            "runs": [
                {
                    "runId": EXAMPLE_RUN,
                    "workflowId": "coding-task",
                    "goal": "Add a --verbose flag",
                    "status": "active",
                    "currentStep": {"id": "plan", "title": "Plan"},
                    "updatedAt": "2026-01-01T12:00:00.000Z",
                    "workspace": "/home/me/project",
                }
            ]
        },
        handler="workflow_resume",
        runs=True,
        runs_only=True,
    ),
    Tool(
        name="workflow_abandon",
        title="Abandon a run",
        summary="ends a run that will not be finished, kept with the reason",
        description="Ends a run that will not be finished; it is kept, with the reason, as abandoned.",
        arguments={
            "runId": RUN_ID,
            "reason": {
                "type": "string",
                "minLength": 1,
                "maxLength": 2000,
                "description": "Why the run is abandoned",
            },
            "lease": LEASE,
        },
        required=("runId", "reason"),
        output={
            "type": "object",
            "properties": {"runId": {"type": "string"}, "status": STATUS, "workflowId": {"type": "string"}},
            "required": ["runId", "status"],
        },
        annotations={**WRITES, "destructiveHint": True, "idempotentHint": True},
        example={"runId": EXAMPLE_RUN, "reason": "Superseded"},
        answer={"runId": EXAMPLE_RUN, "status": "abandoned", "workflowId": "coding-task"},
        handler="workflow_abandon",
        runs=True,
        runs_only=True,
    ),
    Tool(
        name="workflow_claim",
        title="Claim a branch",
        summary="a branch of a parallel loop that nobody holds, with a lease that keeps it yours",
        description="Gives you a branch of a parallel loop that nobody holds, with a lease: the branch "
        "is yours until leaseUntil, and each of your calls on it renews the lease. Work on it with "
        "workflow_continue and its runId as on any run, sending lease.token as `lease` (with "
        "workflow_resume and workflow_abandon too); other agents are refused while your lease lives. "
        "When nothing is free, claimed is false and the message says whether every branch is held or done.",
        arguments={
            "runId": {**RUN_ID, "description": "Only the branches of this run (the loop's run)"},
            "workflowId": {**ID, "description": "Only the branches of runs of this workflow"},
            "workspace": {**WORKSPACE, "description": "Only the branches working in this absolute folder"},
        },
        required=(),
        output=CLAIM_OUTPUT,
        annotations=WRITES,
        example={"runId": EXAMPLE_RUN},
        answer={
            "claimed": True,
            "runId": "run_9a8b7c6d5e4f30211f0e9d8c7b6a5948",
            "status": "active",
            "workflowId": "review-files",
            "goal": "Review every changed file",
            "workspace": "/home/me/project",
            "parentId": EXAMPLE_RUN,
            "parentStep": "review-each",
            "branch": 3,
            "item": "src/app.py",
            "leaseUntil": "2026-01-01T12:05:00.000Z",
            "lease": {"token": "q3Jd9...", "until": "2026-01-01T12:05:00.000Z"},
            **_example_step("review", "Review the file", completed=0),
        },
        handler="workflow_claim",
        runs=True,
        runs_only=True,
    ),
)
