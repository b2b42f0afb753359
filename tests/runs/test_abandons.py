"""An agent's `workflow_abandon` is recorded as the agent's, apart from a person's
`handrail runs abandon`; a workflow that says `"abandon": "person"` is ended by a
person only. Real service, real SQLite store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from handrail.catalog import load_catalog
from handrail.cli import main
from handrail.model.errors import SecurityError
from handrail.model.request import Request
from handrail.service.core import Service
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

AGENT = Request(session="mcp-session-7")


def service_with(tmp_path: Path, **more: Any) -> tuple[Service, str]:
    write(tmp_path / "flows", {**build_feature(), **more})
    workspace = tmp_path / "work"
    workspace.mkdir()
    service = Service(load_catalog(tmp_path / "flows", bundled=False))
    run = service.call(
        "workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Cart", "workspace": str(workspace)}
    )
    return service, str(run["runId"])


def abandoned(service: Service, run: str) -> dict[str, Any]:
    [event] = [e for e in service.runs.ledger.events(run) if e.type == "abandoned"]
    return dict(event.data)


def test_an_agents_abandon_is_recorded_with_its_session_and_a_persons_as_a_persons(tmp_path: Path) -> None:
    service, run = service_with(tmp_path)
    try:
        service.call("workflow_abandon", {"runId": run, "reason": "stuck"}, AGENT)
        assert abandoned(service, run) == {"reason": "stuck", "by": "agent", "session": "mcp-session-7"}
        other = service.call(
            "workflow_start",
            {"workflowId": WORKFLOW_ID, "goal": "Again", "workspace": str(tmp_path / "work")},
        )["runId"]
    finally:
        service.close()
    assert main(["runs", "abandon", other, "--reason", "not needed"]) == 0
    again = Service(load_catalog(tmp_path / "flows", bundled=False))
    try:
        assert abandoned(again, other) == {"reason": "not needed", "by": "person"}
    finally:
        again.close()


def test_a_workflow_that_leaves_abandoning_to_a_person_refuses_the_agent(tmp_path: Path) -> None:
    service, run = service_with(tmp_path, abandon="person")
    try:
        with pytest.raises(SecurityError) as refused:
            service.call("workflow_abandon", {"runId": run, "reason": "bored"}, AGENT)
        assert refused.value.code == -32007 and f"handrail runs abandon {run}" in str(refused.value)
        assert service.call("workflow_resume", {"runId": run})["status"] == "active"
    finally:
        service.close()
    assert main(["runs", "abandon", run]) == 0


def test_check_knows_the_abandon_field_and_names_a_wrong_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "good", {**build_feature(), "abandon": "person"})
    assert main(["check", str(tmp_path / "good")]) == 0
    write(tmp_path / "bad", {**build_feature(), "abandon": "nobody"})
    capsys.readouterr()
    assert main(["check", str(tmp_path / "bad")]) != 0
    assert "abandon" in capsys.readouterr().out
