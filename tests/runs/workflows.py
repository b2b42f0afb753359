"""A small workflow with a rule, a forEach loop and a closing step, for the run tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

WORKFLOW_ID = "build-feature"


def build_feature(version: str = "1.0.0", report_prompt: str = "Report what you built.") -> dict[str, Any]:
    return {
        "id": WORKFLOW_ID,
        "name": "Build a feature",
        "description": "Plan, build each part, report.",
        "version": version,
        "steps": [
            {
                "id": "plan",
                "title": "Plan",
                "prompt": "Write the plan.",
                "validationCriteria": [
                    {"type": "contains", "value": "Plan:", "message": "Start the plan with 'Plan:'"}
                ],
            },
            {
                "id": "parts",
                "type": "loop",
                "title": "Each part",
                "loop": {"type": "forEach", "items": "parts", "itemVar": "part", "maxIterations": 50},
                "body": [
                    {
                        "id": "build",
                        "title": "Build a part",
                        "prompt": "Build {{part}}.",
                        "validationCriteria": [
                            {"type": "contains", "value": "Built", "message": "Say what you built"}
                        ],
                    }
                ],
            },
            {"id": "report", "title": "Report", "prompt": report_prompt},
        ],
    }


def write(folder: Path, document: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{document['id']}.json"
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


REVIEW_ID = "review-files"


def review_files(
    *, max_parallel: int = 2, at_least: int | None = None, confirm: bool = False
) -> dict[str, Any]:
    """A list of files, a parallel loop reviewing each (two steps per file, the review
    approved by a person when `confirm`), a report."""
    loop: dict[str, Any] = {
        "type": "forEach",
        "items": "files",
        "itemVar": "file",
        "maxIterations": 100,
        "parallel": True,
        "maxParallel": max_parallel,
        "as": "reviews",
    }
    if at_least is not None:
        loop["atLeast"] = at_least
    return {
        "id": REVIEW_ID,
        "name": "Review files",
        "description": "Each file reviewed on its own branch, then one report.",
        "version": "1.0.0",
        "steps": [
            {"id": "collect", "title": "Collect", "prompt": "List the files to review."},
            {
                "id": "each-file",
                "type": "loop",
                "title": "Each file",
                "loop": loop,
                "body": [
                    {
                        "id": "review",
                        "title": "Review {{file}}",
                        "prompt": "Review {{file}} (item {{currentIndex}}).",
                        "validationCriteria": [
                            {"type": "contains", "value": "Reviewed", "message": "Say what you reviewed"}
                        ],
                        **({"requireConfirmation": True} if confirm else {}),
                    },
                    {"id": "note", "title": "Note {{file}}", "prompt": "Note what {{file}} needs."},
                ],
            },
            {"id": "report", "title": "Report", "prompt": "Report on every file."},
        ],
    }


def code_review(*, confirm: bool = False) -> dict[str, Any]:
    """The workflow a sub-workflow step starts: read a target, then judge it."""
    judge: dict[str, Any] = {"id": "judge", "title": "Judge {{target}}", "prompt": "Set `verdict`."}
    if confirm:
        judge["requireConfirmation"] = True
    return {
        "id": "code-review",
        "name": "Code review",
        "description": "Read a file, then judge it.",
        "version": "1.0.0",
        "steps": [{"id": "read", "title": "Read {{target}}", "prompt": "Read {{target}}."}, judge],
    }


def review_each(target: str = "code-review") -> dict[str, Any]:
    """A code review per file, each a child run of workflow `target`, then a report."""
    return {
        "id": "review-each",
        "name": "Review each",
        "description": "A code review per file, as child runs.",
        "version": "1.0.0",
        "steps": [
            {
                "id": "each-file",
                "type": "loop",
                "title": "Each file",
                "loop": {"type": "forEach", "items": "files", "itemVar": "file", "maxIterations": 5},
                "body": [
                    {
                        "id": "review-one",
                        "workflow": target,
                        "context": {"target": "{{file}}"},
                        "as": "review",
                    }
                ],
            },
            {"id": "report", "title": "Report", "prompt": "Report."},
        ],
    }
