"""What the pages show, shaped from the run store and the catalog (no HTTP here)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from markdown_it import MarkdownIt
from markupsafe import Markup

from handrail.graph import Cluster, DiagramNode, build, to_mermaid
from handrail.model import Step

if TYPE_CHECKING:
    from handrail.catalog import Snapshot
    from handrail.model import Workflow
    from handrail.store import Event, RunRecord

FOLD_CHARS = 1500  # outputs longer than this (or FOLD_LINES lines) start folded
FOLD_LINES = 25
TAIL_CHARS = 2000  # how much of a check's output the page shows
# Raw HTML off: an output holding <script> is shown as text, never run. markdown-it
# also refuses javascript:, vbscript: and data: (but images) link targets.
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")


def markdown(text: str) -> Markup:
    return Markup(_MARKDOWN.render(text))  # html is disabled above: the renderer escapes


def folded(text: str) -> bool:
    return len(text) > FOLD_CHARS or text.count("\n") >= FOLD_LINES


def run_row(run: RunRecord) -> dict[str, Any]:
    step = run.current_step
    return {
        "runId": run.id,
        "workflowId": run.workflow_id,
        "goal": run.goal,
        "status": run.status,
        "currentStep": step,
        "owner": run.owner,
        "workspace": run.workspace,
        "updatedAt": run.updated_at,
        "completed": run.accepted,
    }


def filter_runs(runs: Sequence[RunRecord], workflow: str | None) -> list[RunRecord]:
    return [r for r in runs if not workflow or r.workflow_id == workflow]


def timeline(events: Sequence[Event], workflow: Workflow | None) -> list[dict[str, Any]]:
    """Events grouped into blocks: consecutive events of one step make one block (a
    loop's step met again starts a new one); events of no step stand alone."""
    blocks: list[dict[str, Any]] = []
    for event in events:
        if event.step_id is None:
            blocks.append({"kind": "event", "event": _event(event)})
            continue
        last = blocks[-1] if blocks else None
        if last is None or last["kind"] != "step" or last["stepId"] != event.step_id:
            node = workflow.nodes.get(event.step_id) if workflow is not None else None
            last = {
                "kind": "step",
                "stepId": event.step_id,
                "title": node.title if node is not None else event.step_id,
                "prompt": node.prompt if isinstance(node, Step) else None,
                "items": [],
            }
            blocks.append(last)
        last["items"].append(_event(event))
    return blocks


def _event(event: Event) -> dict[str, Any]:
    data = dict(event.data)
    item: dict[str, Any] = {"type": event.type, "at": event.at, "actor": event.actor, "data": data}
    output = data.get("output")
    if event.type in ("accepted", "rejected") and isinstance(output, str):
        item["html"] = markdown(output)
        item["folded"] = folded(output)
    elif event.type == "check" and isinstance(output, str):
        item["tail"] = output[-TAIL_CHARS:]
    item["issues"] = [str(i) for i in data.get("issues", []) or []]
    return item


def step_keys(workflow: Workflow) -> dict[str, str]:
    """Each step's node key in the graph of `handrail graph` (step ids are unique)."""
    keys: dict[str, str] = {}

    def walk(members: Sequence[DiagramNode | Cluster]) -> None:
        for member in members:
            if isinstance(member, Cluster):
                walk(member.members)
            elif member.kind in ("step", "confirm"):
                match = next((m for m in map(_STEP_LINE.match, reversed(member.lines)) if m), None)
                if match is not None:
                    keys.setdefault(match.group(1), member.key)

    walk(build(workflow).root)
    return keys


_STEP_LINE = re.compile(r"^\((.+)\)$")


def run_graph(workflow: Workflow, run: RunRecord, events: Sequence[Event]) -> str:
    """The workflow's Mermaid graph with the steps the run went through, and the one it
    is at, highlighted."""
    keys = step_keys(workflow)
    done = [keys[e.step_id] for e in events if e.type == "accepted" and e.step_id in keys]
    text = to_mermaid(workflow)
    lines = ["    classDef visited fill:#d1fae5,stroke:#047857,stroke-width:2px"]
    if done:
        lines.append(f"    class {','.join(dict.fromkeys(done))} visited")
    step = run.current_step
    if step is not None and step["id"] in keys and run.status in ("active", "awaiting_approval"):
        lines.append("    classDef current fill:#fef3c7,stroke:#b45309,stroke-width:3px")
        lines.append(f"    class {keys[step['id']]} current")
    return text + "\n".join(lines) + "\n"


def catalog(snapshot: Snapshot) -> dict[str, Any]:
    # each compiled on the way (the catalog compiles on first use); one found broken is left out
    workflows = [w for w in map(snapshot.get, sorted(snapshot.entries)) if w is not None]
    return {
        "workflows": [
            {
                "id": w.id,
                "name": w.name,
                "version": w.version,
                "description": w.description,
                "graph": to_mermaid(w),
            }
            for w in workflows
        ],
        "broken": _by_file([d.as_dict() for d in snapshot.problems]),
    }


def _by_file(diagnostics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    files: dict[str, list[dict[str, Any]]] = {}
    for d in diagnostics:
        files.setdefault(d["file"], []).append(d)
    return [{"file": name, "diagnostics": found} for name, found in files.items()]


def pretty(value: Any) -> str:
    import json

    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
