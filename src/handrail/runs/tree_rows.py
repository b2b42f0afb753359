"""A parallel loop's branches as the tree names and lists them: a branch's run id, the
same for every server that opens it, and a child run's row in its parent's answers and
`handrail runs show` (runs/tree.py moves the tree)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from handrail.model.runs import RunRecord
from handrail.runs.holders import shown_holder


def branch_id(parent: RunRecord, waiting: Mapping[str, Any], index: int) -> str:
    """A branch's run id: the same for every server that opens it, unguessable as its
    parent's (the parent's own id, secret, goes into the hash)."""
    return derived_id(parent.id, waiting.get("stepId"), parent.accepted, index)


def derived_id(parent_id: str, step_id: Any, accepted: int, index: int) -> str:
    key = f"{parent_id}\n{step_id}\n{accepted}\n{index}"
    return "run_" + hashlib.sha256(key.encode()).hexdigest()[:32]


def branch_row(run: RunRecord) -> dict[str, Any]:
    """A child run as its parent's answers and `handrail runs show` list it."""
    row: dict[str, Any] = {"branch": run.branch, "runId": run.id, "status": run.status.value}
    scope = run.position.get("branchOf")
    if isinstance(scope, Mapping) and "item" in scope:
        row["item"] = scope["item"]
    step = run.current_step
    row["currentStep"] = step["id"] if step is not None else None
    row["holder"] = shown_holder(run.holder)  # its kind and a short id, never the raw session
    if run.lease_until is not None:
        row["leaseUntil"] = run.lease_until
    return row
