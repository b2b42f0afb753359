"""What a parent's context receives of its branches and children (runs/tree.py):
each one's status, the recap of its last accepted steps and the context it changed,
cut down, as little as will do, to fit the parent's context limit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from handrail.model.codec import json_size
from handrail.model.runs import RunRecord, RunStatus
from handrail.runs.ledger import Ledger
from handrail.runs.shapes import recap

if TYPE_CHECKING:
    from handrail.model.workflow import Loop, Workflow

RECAP_STEPS = 10  # a branch's result keeps the recap of its last accepted steps, at most
FINISHED = (RunStatus.COMPLETED, RunStatus.ABANDONED)


def branch_results(
    ledger: Ledger, run: RunRecord, workflow: Workflow, loop: Loop, children: Sequence[RunRecord | None]
) -> list[dict[str, Any]]:
    """Each branch's result in item order: its status, the recap of its last accepted
    steps and the context it changed; cut down to fit the parent's context limit."""
    from handrail.expr import lookup  # as in _open

    items = lookup(run.context, loop.items or "")
    full: list[dict[str, Any]] = []
    for index, child in enumerate(children):
        item = items[index] if isinstance(items, list) and index < len(items) else None
        row: dict[str, Any] = {"index": index, "item": item}
        if child is None:
            full.append({**row, "status": "cancelled"})
            continue
        status = child.status.value if child.status in FINISHED else "cancelled"  # cancelled next
        row.update({"runId": child.id, "status": status})
        row["outputs"] = recap(ledger.store.shown_events(child.id, 0), workflow)[-RECAP_STEPS:]
        row["context"] = {
            k: v for k, v in child.context.items() if k not in run.context or run.context[k] != v
        }
        full.append(row)
    return fitted(ledger, run, full)


def fitted(ledger: Ledger, run: RunRecord, full: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Results cut down, as little as will do, to fit the parent's context limit."""
    room = ledger.settings.max_context_bytes - json_size(run.context) - 64
    for cut in (_whole, _without_context, _last_output, _status_only):
        shaped = [cut(r) for r in full]
        if json_size(shaped) <= room:
            return shaped
    return []


def _whole(row: dict[str, Any]) -> dict[str, Any]:
    return row


def _without_context(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != "context"}


def _last_output(row: dict[str, Any]) -> dict[str, Any]:
    outputs = row.get("outputs")
    out = _without_context(row)
    if outputs:
        out["outputs"] = outputs[-1:]
    return out


def _status_only(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ("index", "runId", "status") if k in row}
