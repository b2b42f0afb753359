"""The JSON Schemas of the names tools take: a workflow's id, a run's, a step's."""

from __future__ import annotations

ID = {"type": "string", "pattern": "^[a-z0-9-]+$", "minLength": 3, "maxLength": 64}
RUN_ID = {
    "type": "string",
    "pattern": "^[A-Za-z0-9_-]+$",
    "minLength": 8,
    "maxLength": 64,
    "description": "The run's id, as workflow_start returned it",
}
STEP_ID = {"type": "string", "pattern": "^[a-z0-9-]+$", "minLength": 1, "maxLength": 64}
