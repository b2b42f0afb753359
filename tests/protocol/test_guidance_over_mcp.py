"""What a blocked workflow tells an agent over MCP: the kind of value a loop needs,
and only the variables whose value could change the decision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.server import Server

pytestmark = pytest.mark.slow

WORKFLOW = {
    "id": "deciding",
    "name": "Deciding",
    "description": "Gather, go through the files, then proceed when the evidence holds.",
    "version": "1.0.0",
    "steps": [
        {"id": "gather", "title": "Gather", "prompt": "Gather evidence; set files and evidenceScore."},
        {
            "id": "each-file",
            "type": "loop",
            "title": "Each file",
            "loop": {"type": "forEach", "items": "files", "maxIterations": 10},
            "body": [{"id": "read-file", "title": "Read {{currentItem}}", "prompt": "Read it."}],
        },
        {
            "id": "proceed",
            "title": "Proceed",
            "prompt": "Proceed; assumptionAccepted and reviewer may be set.",
            "runCondition": "(evidenceScore >= 7 or assumptionAccepted) and reviewer",
        },
    ],
}


def _next(server: Server, completed: list[str], context: dict[str, Any]) -> dict[str, Any]:
    arguments = {"workflowId": "deciding", "completedSteps": completed, "context": context}
    result: dict[str, Any] = server.call("workflow_next", arguments)["structuredContent"]
    return result


def test_a_blocked_walk_says_what_kind_of_value_a_loop_needs_and_only_what_decides(tmp_path: Path) -> None:
    (tmp_path / "deciding.json").write_text(json.dumps(WORKFLOW), encoding="utf-8")
    with Server("--no-bundled", "--workflows", str(tmp_path)) as server:
        server.initialize()
        blocked = _next(server, ["gather"], {})
        assert blocked["step"] is None and blocked["isComplete"] is False
        assert blocked["guidance"]["missingContext"] == {"files": []}
        assert blocked["guidance"]["missingKinds"] == {"files": "list"}
        assert "- `files` (a JSON list: loop `each-file` goes through it)" in blocked["guidance"]["prompt"]

        after_loop = ["gather", "each-file"]
        blocked = _next(server, after_loop, {"files": [], "evidenceScore": 8})
        assert blocked["guidance"]["missingContext"] == {"reviewer": [True]}  # not assumptionAccepted
        assert "missingKinds" not in blocked["guidance"]
        assert "assumptionAccepted" not in blocked["guidance"]["prompt"]

        blocked = _next(server, after_loop, {"files": [], "evidenceScore": 3, "reviewer": "ana"})
        assert blocked["guidance"]["missingContext"] == {"assumptionAccepted": [True]}
