"""What a model reads in prose: the server's instructions, a workflow's prompt, and
the fix text of a tool call that failed."""

from __future__ import annotations

from typing import Any

from handrail.codec import encode
from handrail.errors import HandrailError


def instructions(workflows: list[Any], *, runs_only: bool = False) -> str:
    """`runs_only`: the server offers only the run tools (and workflow_list), so the text
    teaches those; else it teaches both ways."""
    if not workflows:
        return (
            "No workflows configured.\n\n"
            "To add workflows, put workflow JSON files in ~/.handrail/workflows or ./workflows, "
            "or start the server with --workflows PATH. `handrail init` creates a sample."
        )
    blocks = []
    for w in workflows:
        description = w.description or "No description provided"
        blocks.append(f"{w.id} ({w.step_count} steps)\n  Description: {description}")
    listed = "Available workflows:\n\n" + "\n\n".join(blocks) + "\n\n"
    as_a_run = (
        "call workflow_start with its id as workflowId and a goal (a sentence saying what the "
        "run is for). It returns a runId and the first step. Do the step, then call "
        "workflow_continue with the runId, the step's id as stepId and what you produced as "
        "output: the server checks it and answers with the next step, or with the issues to "
        "fix. Repeat until the status is completed."
    )
    if runs_only:
        return listed + "To follow a workflow, " + as_a_run
    return (
        listed + "To follow a workflow, call workflow_next with its id as workflowId and an empty "
        "completedSteps list. Do the step it returns, check your output with "
        "workflow_validate, then call workflow_next again with the result's completedSteps "
        "plus that step's id, the result's state, and your context.\n\n"
        "To have the server keep track instead (it checks each step and remembers where the "
        "work stands, across conversations), " + as_a_run
    )


def with_runs(text: str, runs_note: str) -> str:
    """The instructions, with the unfinished runs of the server's workspace first when
    there are any (see spec/runs.md)."""
    return f"{runs_note}\n\n{text}" if runs_note else text


def prompt_text(workflow: Any) -> str:
    """What the model reads when a user picks a workflow's prompt."""
    start = encode({"workflowId": workflow.id, "completedSteps": []}).decode()
    description = f"\n\n{workflow.description}" if workflow.description else ""
    return (
        f'Follow the workflow "{workflow.name}" ({workflow.id}) step by step.{description}\n\n'
        f"1. Call the workflow_next tool with {start}. It returns the first step to do.\n"
        "2. Do that step. Check what you produced with the workflow_validate tool "
        f'(workflowId "{workflow.id}", the step\'s id as stepId, your output as output, and your '
        "context) and fix what it reports before moving on.\n"
        "3. Call workflow_next again with the previous result's completedSteps plus the step's id, "
        "the result's state unchanged, and your context. Repeat from 2 until the result says "
        "isComplete is true."
    )


def fix_text(tool: str, exc: HandrailError) -> str:
    """What a model reads when its call failed: the error and how to correct the call."""
    data = exc.data or {}
    text = f"{tool} failed: {exc.message} (code {exc.code})."
    if "details" in data:
        text += f" {data['details']}."
    return text + exc.fix()
