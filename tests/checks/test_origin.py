"""Only workflows from the sources a user configured may run commands."""

from __future__ import annotations

import json
from pathlib import Path

from handrail.catalog import load_catalog
from handrail.compiler import compile_text
from tests.checks.test_cli import WORKFLOW


def test_a_workflow_read_from_a_configured_source_has_the_source_origin(tmp_path: Path) -> None:
    (tmp_path / "checked-work.json").write_text(json.dumps(WORKFLOW), encoding="utf-8")
    workflow = load_catalog(str(tmp_path)).snapshot().get("checked-work")
    assert workflow is not None
    assert workflow.origin == "source"


def test_text_compiled_without_a_word_on_its_origin_counts_as_submitted() -> None:
    compiled = compile_text(json.dumps(WORKFLOW))
    assert compiled.workflow is not None
    assert compiled.workflow.origin == "submitted"
