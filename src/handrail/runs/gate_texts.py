"""What the gate tells the agent (spec/gate.md): the run's context at session start
and after compaction, the reminder with each prompt, the call that carries the run on."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from handrail.runs.gate import RunFacts

CONTEXT_BYTES = 2000
PROMPT_CHARS = 800


def context(run: RunFacts) -> str:
    """What an agent is told at session start and after compaction (under 2 KB)."""
    head = f"Active handrail run {run.run_id} of workflow {run.workflow_id}. Goal: {cut(run.goal, 300)}"
    accepted = ", ".join(run.accepted) if run.accepted else "none"
    if run.step_id is None:
        lines = [
            head,
            "The run has no current step: call workflow_resume with runId to see what it waits for.",
        ]
    else:
        lines = [
            head,
            f"Current step {run.step_number} of {run.step_count}: {run.step_id} ({run.step_title}).",
        ]
        if run.status == "awaiting_approval":
            lines.append("The step waits on a person's approval (handrail runs approve, or the dashboard).")
    lines.append(f"Accepted steps: {cut(accepted, 300)}.")
    lines.append(next_call(run))
    fixed = sum(len(line.encode()) + 1 for line in lines)
    if run.step_prompt and run.step_id is not None:
        room = max(0, min(PROMPT_CHARS, CONTEXT_BYTES - fixed - 20))
        lines.insert(2, f"Step prompt: {_cut_bytes(' '.join(run.step_prompt.split()), room)}")
    return "\n".join(lines)


def next_call(run: RunFacts) -> str:
    if run.status == "awaiting_approval":
        return f'Next call: none until a person decides; then workflow_resume with runId "{run.run_id}".'
    if run.step_id is None:
        return f'Next call: workflow_resume with runId "{run.run_id}".'
    ids = f'runId "{run.run_id}", stepId "{run.step_id}"'
    return f"Next call: workflow_continue with {ids} and the step's output."


def reminder(run: RunFacts) -> str:
    where = f"step '{run.step_id}' ({run.step_number} of {run.step_count})" if run.step_id else "no step"
    return f"handrail: run {run.run_id} is at {where}."


def held_elsewhere(run: RunFacts) -> str:
    """What a session is told of a run bound to another."""
    return (
        f"The run is bound to another session ({cut(run.bound or '', 60)}): this one's stops are not "
        f'held back. To carry the run on here, call workflow_resume with runId "{run.run_id}".'
    )


def cut(text: str, chars: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"


def _cut_bytes(text: str, size: int) -> str:
    head = text.encode()[: max(0, size - 3)].decode(errors="ignore")
    return text if len(text.encode()) <= size else head.rstrip() + "…"
