"""What a model reads in prose: the server's instructions (the essentials `initialize`
gives, and the whole text the resource GUIDE_URI gives), a workflow's prompt, and the
fix text of a tool call that failed."""

from __future__ import annotations

from typing import Any

from handrail.model.codec import encode
from handrail.model.errors import HandrailError

NO_DESCRIPTION = "No description provided"
ESSENTIALS = 2000  # Claude Code keeps the first 2,048 characters of a server's instructions
GUIDE_URI = "handrail://instructions"  # the whole text, which the essentials name
WHAT = (
    "handrail keeps you on a workflow's steps: in a run the server checks each step's output "
    "(its rules, its checks, a person's approval where the step asks for one) and remembers where "
    "the work stands across conversations."
)
HOW = (
    "How a run goes: call workflow_start with a workflowId and a goal; it returns a runId and the "
    "first step. Do the step, then call workflow_continue with the runId, the step's id as stepId "
    "and your output (and `context` where the step says to set a variable). Accepted: the next "
    "step comes back; not accepted: fix what the issues say and send it again. Repeat until the "
    "status is completed. A step waiting for a person (awaiting_approval) says where they approve."
)
RESUME = (
    "To resume: workflow_resume with no arguments lists your open runs here; with a runId it "
    "returns the current step, the context and a recap of the work so far."
)
WITHOUT_A_RUN = (
    " Without a run, workflow_next (from an empty completedSteps list) and workflow_validate go "
    "step by step and keep nothing."
)


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
        description = w.description or NO_DESCRIPTION
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


def essentials(workflows: list[Any], runs_note: str, *, runs_only: bool = False) -> str:
    """The instructions a client is sure to keep, within ESSENTIALS characters: what handrail
    is, how a run goes, how to resume, the open runs, the workflows, and where the rest is
    (GUIDE_URI). What does not fit is cut from the end of the open runs and the workflows."""
    if not workflows:
        return instructions(workflows, runs_only=runs_only)
    head = f"{WHAT}\n\n{HOW}{'' if runs_only else WITHOUT_A_RUN}\n\n{RESUME}"
    tail = (
        f"The workflows' descriptions, both ways of following one, and this text in full: read the "
        f"resource {GUIDE_URI}."
    )
    room = ESSENTIALS - len(head) - len(tail) - 6  # the blank lines between the parts
    names = "Available workflows: " + ", ".join(f"{w.id} ({w.step_count} steps)" for w in workflows)
    # the open runs first: what a new conversation must not miss; the workflows' names after
    runs = _fitted(runs_note.split("\n\n", 1)[0], room - min(len(names), 300), "workflow_resume lists them")
    room -= len(runs)
    blocks = [
        f"{w.id} ({w.step_count} steps)\n  Description: {w.description or NO_DESCRIPTION}" for w in workflows
    ]
    listed = "Available workflows:\n\n" + "\n\n".join(blocks)
    if len(listed) > room:
        listed = _fitted(names, room, "listed in " + GUIDE_URI, ", ")
    parts = [head, *([runs] if runs else []), *([listed] if listed else []), tail]
    return "\n\n".join(parts)[:ESSENTIALS]


def _fitted(text: str, room: int, rest: str, separator: str = "\n") -> str:
    """`text` cut at a `separator` to fit `room` characters, saying how many were left out."""
    if len(text) <= room:
        return text
    pieces = text.split(separator)
    for keep in range(len(pieces) - 1, 0, -1):
        kept = separator.join(pieces[:keep]) + f"{separator}... and {len(pieces) - keep} more ({rest})"
        if len(kept) <= room:
            return kept
    return ""


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
