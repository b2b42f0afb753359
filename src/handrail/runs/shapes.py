"""One way to shape a run for output: the fields the run tools' results, `handrail runs
show`, the dashboard and workflow_resume's recap give, each named and computed once
here, and the engine's answer as a run's results show it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from handrail.model.runs import EventType
from handrail.runs.position import Position

if TYPE_CHECKING:
    from handrail.model.runs import Event, RunRecord
    from handrail.model.workflow import Workflow

RECAP_CHARS = 300  # how much of each accepted output a resumed run's recap shows

FIELDS: Mapping[str, Callable[[RunRecord], Any]] = MappingProxyType(
    {
        "runId": lambda r: r.id,
        "status": lambda r: str(r.status),  # the plain value, as stored
        "workflowId": lambda r: r.workflow_id,
        "workflowVersion": lambda r: r.workflow_version,
        "goal": lambda r: r.goal,
        "workspace": lambda r: r.workspace,
        "owner": lambda r: r.owner,
        "currentStep": lambda r: r.current_step,
        "completed": lambda r: r.accepted,
        "context": lambda r: dict(r.context),
        "createdAt": lambda r: r.created_at,
        "updatedAt": lambda r: r.updated_at,
        "version": lambda r: r.version,
    }
)


def shaped(run: RunRecord, fields: Iterable[str]) -> dict[str, Any]:
    """`run` as a dict of `fields` (names of FIELDS), in that order."""
    return {name: FIELDS[name](run) for name in fields}


def view(run: RunRecord) -> dict[str, Any]:
    """The engine's answer as the run keeps it, shaped as in workflow_next (bookkeeping
    left out), with the run's progress."""
    position = Position.stored(run.position)
    guidance: Any = position.guidance
    if position.step is None and position.guidance is not None:
        guidance = _run_guidance(dict(guidance))
    shown: dict[str, Any] = {
        "step": position.step,
        "guidance": guidance,
        "isComplete": position.is_complete,
    }
    if position.loop is not None:
        shown["loop"] = position.loop
    shown["progress"] = {"completed": run.accepted}
    return shown


def _run_guidance(guidance: dict[str, Any]) -> dict[str, Any]:
    """A blocked run's guidance, naming the call a run takes: the engine's names workflow_next."""
    from handrail.engine.next import AGAIN  # the engine loads with the first run

    prompt = guidance.get("prompt")
    if not isinstance(prompt, str) or AGAIN not in prompt:
        return guidance
    told = "call workflow_continue with this runId and only `context` (no stepId, no output)"
    return {**guidance, "prompt": prompt.replace(AGAIN, told)}


def summary(output: str) -> str:
    text = " ".join(output.split())
    return text if len(text) <= RECAP_CHARS else text[: RECAP_CHARS - 1].rstrip() + "…"


def event_title(event: Event, fallback: str) -> str:
    """The title a step's event was given for its iteration, else `fallback` (the step's
    own title: events written before titles were kept on them)."""
    title = event.data.get("title")
    return title if isinstance(title, str) else fallback


def recap(events: Iterable[Event], workflow: Workflow) -> list[dict[str, Any]]:
    """Each accepted step of a run: its id, its title as shown, its output in short."""
    done = []
    for event in events:
        if event.type == EventType.ACCEPTED and event.step_id is not None:
            node = workflow.nodes.get(event.step_id)
            done.append(
                {
                    "stepId": event.step_id,
                    "title": event_title(event, node.title if node is not None else event.step_id),
                    "summary": summary(str(event.data.get("output", ""))),
                }
            )
    return done
