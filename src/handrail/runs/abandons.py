"""Who ended a run that was not finished (spec/runs.md, "Abandoning a run"): an agent
through `workflow_abandon` (a request with an MCP session) or a person (`handrail runs
abandon`, the dashboard), recorded apart; and a workflow's `"abandon": "person"`,
under which only a person may."""

from __future__ import annotations

import json
from typing import Any

from handrail.model.errors import SecurityError
from handrail.model.request import Request
from handrail.model.runs import RunRecord
from handrail.store.base import RunStore


def by_whom(request: Request) -> dict[str, Any]:
    """The `abandoned` event's words for who asked: an agent's session, or a person."""
    if request.session is not None:
        return {"by": "agent", "session": request.session[:100]}
    return {"by": "person"}


def only_a_person(store: RunStore, run: RunRecord) -> bool:
    """Whether the run's pinned workflow says `"abandon": "person"`."""
    source = store.get_source(run.source_hash)
    try:
        document = json.loads(source) if source is not None else {}
    except (ValueError, RecursionError):
        return False
    return isinstance(document, dict) and document.get("abandon") == "person"


def check_allowed(store: RunStore, run: RunRecord, request: Request) -> None:
    """Refuse an agent's abandon of a run whose workflow leaves that to a person."""
    if request.session is not None and only_a_person(store, run):
        raise SecurityError(
            f'only a person can abandon run {run.id}: its workflow says "abandon": "person". '
            f"Ask the person to run `handrail runs abandon {run.id}` or to use the dashboard.",
            {"runId": run.id, "abandon": "person"},
        )
