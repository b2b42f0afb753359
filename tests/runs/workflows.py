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
