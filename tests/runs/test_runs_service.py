"""Run rules the service enforces that the golden traces do not show: the size of a
run's merged context, and runs belonging to the person who started them."""

from __future__ import annotations

from pathlib import Path

import pytest

from handrail.catalog import load_catalog
from handrail.model.errors import HandrailError
from handrail.service.core import Service
from tests.runs.workflows import WORKFLOW_ID, build_feature, write


def test_a_run_context_grown_past_the_limit_by_merges_is_refused(tmp_path: Path) -> None:
    from handrail.model.limits import Limits

    write(tmp_path / "flows", build_feature())
    service = Service(load_catalog(tmp_path / "flows", bundled=False), Limits(max_context_bytes=200))
    try:
        run = service.call(
            "workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Grow", "workspace": str(tmp_path)}
        )
        service.call("workflow_continue", {"runId": run["runId"], "context": {"a": "x" * 120}})
        with pytest.raises(HandrailError) as refused:
            service.call("workflow_continue", {"runId": run["runId"], "context": {"b": "y" * 120}})
        assert refused.value.code == -32602 and refused.value.data["limit"] == "maxContextBytes"
        assert "setting them to null" in refused.value.data["details"]
        smaller = service.call(
            "workflow_continue", {"runId": run["runId"], "context": {"a": None, "b": "y" * 120}}
        )
        assert smaller["step"]["id"] == "plan"
    finally:
        service.close()


def test_another_persons_run_is_not_found(tmp_path: Path) -> None:
    from handrail.model.request import Request

    write(tmp_path / "flows", build_feature())
    service = Service(load_catalog(tmp_path / "flows", bundled=False))
    try:
        alice, bob = Request(owner="alice"), Request(owner="bob")
        run = service.call(
            "workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Mine", "workspace": str(tmp_path)}, alice
        )
        for name, arguments in (
            ("workflow_continue", {"runId": run["runId"], "stepId": "plan", "output": "Plan: hers."}),
            ("workflow_resume", {"runId": run["runId"]}),
            ("workflow_abandon", {"runId": run["runId"], "reason": "not mine"}),
        ):
            with pytest.raises(HandrailError) as refused:
                service.call(name, arguments, bob)
            assert refused.value.code == -32008, name
        assert service.call("workflow_resume", {"workspace": str(tmp_path)}, bob) == {"runs": []}
    finally:
        service.close()
