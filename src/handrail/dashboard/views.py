"""What the pages show, shaped from the run store and the catalog (no HTTP here)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from markdown_it import MarkdownIt
from markupsafe import Markup

from handrail.compiler.graph import Cluster, DiagramNode, build, to_mermaid
from handrail.model.errors import HandrailError, RunNotActive, RunNotFound, StateError
from handrail.model.runs import ACTIVE_STATUSES, EventType
from handrail.model.workflow import Step
from handrail.runs.migration import summary as migration_summary
from handrail.runs.refusals import NotAllowedToDecide
from handrail.runs.shapes import shaped

if TYPE_CHECKING:
    from handrail.catalog import Snapshot
    from handrail.model.runs import Event, RunRecord
    from handrail.model.workflow import Workflow

FOLD_CHARS = 1500  # outputs longer than this (or FOLD_LINES lines) start folded
FOLD_LINES = 25
TAIL_CHARS = 2000  # how much of a check's output the page shows
# Raw HTML off: an output holding <script> is shown as text, never run. markdown-it
# also refuses javascript:, vbscript: and data: (but images) link targets.
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")
# an issue's text is a message and often the end of a program's output: each line break kept
_LINES = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable("table")


def markdown(text: str, *, lines: bool = False) -> Markup:
    """`text` as HTML; `lines`: each line break kept as one."""
    return Markup((_LINES if lines else _MARKDOWN).render(text))  # html is off: the renderer escapes


def folded(text: str) -> bool:
    return len(text) > FOLD_CHARS or text.count("\n") >= FOLD_LINES


ROW_FIELDS = (
    "runId",
    "workflowId",
    "goal",
    "status",
    "currentStep",
    "owner",
    "workspace",
    "updatedAt",
    "completed",
)


def run_row(run: RunRecord, workflow: Workflow | None = None, now: datetime | None = None) -> dict[str, Any]:
    step = run.current_step
    if step is not None and workflow is not None:
        order = step_order(workflow)
        if step["id"] in order:
            step = {**step, "number": order.index(step["id"]) + 1, "of": len(order)}
    row = shaped(run, ROW_FIELDS)
    row["currentStep"] = step
    row["updatedAgo"] = ago(run.updated_at, now)
    row["completed"] = row.pop("completed")  # last, as the page's JSON has always had it
    if run.tampered:  # its row is not as its last write sealed it: marked on the list (spec/runs.md)
        row["tampered"] = list(run.tampered)
    return row


DEEPEST = 3  # rows below a run are indented this many levels at most


def grouped(runs: Sequence[RunRecord], row: Callable[[RunRecord], dict[str, Any]]) -> list[dict[str, Any]]:
    """The list's rows, `runs` in their order, except that each run listed is followed by
    its branches and children that are listed (depth first, in branch order, then oldest
    first), each with its `parentId`, `depth` and what it is below its parent (`below`)."""
    listed = {r.id for r in runs}
    under: dict[str, list[RunRecord]] = {}
    for run in runs:
        if run.parent_id is not None and run.parent_id in listed:
            under.setdefault(run.parent_id, []).append(run)
    out: list[dict[str, Any]] = []

    def add(run: RunRecord, depth: int) -> None:
        shown = {**row(run), "parentId": run.parent_id, "depth": min(depth, DEEPEST)}
        if run.parent_id is not None:
            shown["below"] = (
                f"branch #{run.branch} of {run.parent_step}"
                if run.branch is not None
                else f"child run at {run.parent_step}"
            )
        out.append(shown)
        below = sorted(
            under.get(run.id, ()), key=lambda r: (r.branch if r.branch is not None else -1, r.created_at)
        )
        for child in below:
            if depth < 64:  # a tree is at most MAX_DEPTH deep; never loop on bad data
                add(child, depth + 1)

    for run in runs:
        if run.parent_id is None or run.parent_id not in listed:
            add(run, 0)
    return out


def step_order(workflow: Workflow) -> list[str]:
    """The workflow's steps in file order, a loop's body where the loop stands (each once)."""
    order: list[str] = []

    def walk(ids: Sequence[str]) -> None:
        for sid in ids:
            node = workflow.nodes[sid]
            if isinstance(node, Step):
                order.append(sid)
            else:
                walk(node.body)

    walk(workflow.sequence)
    return order


def ago(at: str, now: datetime | None = None) -> str:
    """An ISO time as the reader says it: `just now`, `3 min ago`, `2 h ago`, `4 days ago`,
    then the date."""
    try:
        then = datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError:
        return at
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    seconds = ((now or datetime.now(UTC)) - then).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    if seconds < 7 * 86400:
        days = int(seconds // 86400)
        return f"{days} day{'s' if days > 1 else ''} ago"
    return then.date().isoformat()


def timeline(events: Sequence[Event], workflow: Workflow | None) -> list[dict[str, Any]]:
    """Events grouped into blocks: consecutive events of one step make one block (a
    loop's step met again starts a new one); events of no step stand alone."""
    blocks: list[dict[str, Any]] = []
    for event in events:
        if event.step_id is None:
            blocks.append({"kind": "event", "event": _event(event)})
            continue
        last = blocks[-1] if blocks else None
        if (
            last is None
            or last["kind"] != "step"
            or last["stepId"] != event.step_id
            or last["items"][-1]["type"] == EventType.ACCEPTED  # done: what follows is its next iteration
        ):
            node = workflow.nodes.get(event.step_id) if workflow is not None else None
            last = {
                "kind": "step",
                "stepId": event.step_id,
                "title": node.title if node is not None else event.step_id,
                "prompt": node.prompt if isinstance(node, Step) else None,
                "items": [],
                "titled": False,
            }
            blocks.append(last)
        if not last["titled"] and isinstance(event.data.get("title"), str):
            last["title"], last["titled"] = event.data["title"], True  # as shown for its iteration
        last["items"].append(_event(event))
    return blocks


def _event(event: Event) -> dict[str, Any]:
    data = dict(event.data)
    item: dict[str, Any] = {
        "type": event.type,
        "at": event.at,
        "ago": ago(event.at),
        "actor": event.actor,
        "data": data,
    }
    output = data.get("output")
    shows_output = event.type in (EventType.ACCEPTED, EventType.REJECTED, EventType.AWAITING_APPROVAL)
    if shows_output and isinstance(output, str):
        item["html"] = markdown(output)
        item["folded"] = folded(output)
    elif event.type == EventType.CHECK and isinstance(output, str):
        item["tail"] = output[-TAIL_CHARS:]
    elif event.type == EventType.MIGRATED:
        item["moved"] = migration_summary(data)
    item["issues"] = [markdown(str(i), lines=True) for i in data.get("issues", []) or []]
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
    done = [keys[e.step_id] for e in events if e.type == EventType.ACCEPTED and e.step_id in keys]
    titles = {
        e.step_id: e.data["title"] for e in events if e.step_id and isinstance(e.data.get("title"), str)
    }
    step = run.current_step
    if step is not None and run.status in ACTIVE_STATUSES:
        titles[step["id"]] = step["title"]  # the iteration it is at
    text = to_mermaid(workflow, titles)
    lines = ["    classDef visited fill:#d1fae5,stroke:#047857,stroke-width:2px"]
    if done:
        lines.append(f"    class {','.join(dict.fromkeys(done))} visited")
    if step is not None and step["id"] in keys and run.status in ACTIVE_STATUSES:
        lines.append("    classDef current fill:#fef3c7,stroke:#b45309,stroke-width:3px")
        lines.append(f"    class {keys[step['id']]} current")
    return text + "\n".join(lines) + "\n"


def approval(pending: dict[str, Any] | None) -> dict[str, Any] | None:
    """A pending approval as the approval box shows it: the output as Markdown."""
    if pending is None:
        return None
    output = pending["output"]
    checks = [{**c, "tail": str(c.get("output") or "")[-TAIL_CHARS:]} for c in pending["checks"]]
    return {
        **pending,
        "ago": ago(pending["at"]),
        "html": markdown(output),
        "folded": folded(output),
        "checks": checks,
    }


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


# The run page's status banner says one of these, named by `?note=CODE` after a decision:
# never text taken from the URL, which anyone could put in a link they send.
NOTES = {
    "approved": "Approved.",
    "declined": "Declined.",
    "abandoned": "Abandoned.",
    "not-allowed": "Nothing was decided: you may not decide this step.",
    "not-waiting": (
        "Nothing was decided: the run no longer waits for an approval (it may have been decided already)."
    ),
    "not-found": "Nothing was decided: no such run of yours.",
    "refused": (
        "Nothing was decided: the server refused the decision (see its log, or try `handrail runs approve`)."
    ),
}


def note_code(exc: HandrailError) -> str:
    """The banner's code for a decision that failed with `exc`."""
    if isinstance(exc, NotAllowedToDecide):
        return "not-allowed"
    if isinstance(exc, RunNotActive | StateError):
        return "not-waiting"
    if isinstance(exc, RunNotFound):
        return "not-found"
    return "refused"


def duration(seconds: float | None) -> str:
    """A time as people say it: `850 ms`, `4.2 s`, `12 s`, `3 min 20 s`, `25 min`, `2 h 5 min`;
    `–` for none. Each unit is rounded into the next once it would read 1000 ms, 60 s or
    60 min, so no figure says `60 s`."""
    if seconds is None:
        return "–"
    if seconds < 0:
        return "-" + duration(-seconds)
    ms = int(seconds * 1000 + 0.5)  # half up, as people round
    if ms < 1000:
        return f"{ms} ms"
    tenths = int(seconds * 10 + 0.5)
    if tenths < 100:
        return f"{tenths / 10:.1f} s"
    whole = int(seconds + 0.5)
    if whole < 60:
        return f"{whole} s"
    if whole < 600:  # under ten minutes the seconds still matter
        minutes, rest = divmod(whole, 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    minutes = (whole + 30) // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    return f"{hours} h {rest} min" if rest else f"{hours} h"


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
