"""What keeps a sub-workflow's child within bounds (spec/runs.md, "Sub-workflows"): its
filled context within the server's maxContextBytes, and no workflow started again
below a run of itself, however the cycle is reached."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from handrail.catalog import load_catalog
from handrail.model.limits import Limits
from handrail.service.core import Service
from tests.runs.workflows import code_review, review_each, write


def _service(tmp: Path, *documents: dict[str, Any], limits: Limits | None = None) -> Service:
    for document in documents:
        write(tmp / "flows", document)
    return Service(load_catalog(tmp / "flows", bundled=False), limits)


def _start(service: Service, tmp: Path, workflow_id: str, context: dict[str, Any]) -> dict[str, Any]:
    arguments = {"workflowId": workflow_id, "goal": "G", "workspace": str(tmp), "context": context}
    return dict(service.call("workflow_start", arguments))


def test_a_child_whose_filled_context_is_over_the_servers_limit_fails_the_parents_step(
    tmp_path: Path,
) -> None:
    parent = review_each()
    parent["steps"][0]["body"][0]["context"] = {"a": "{{file}}", "b": "{{file}}", "c": "{{file}}"}
    service = _service(tmp_path, parent, code_review(), limits=Limits(max_context_bytes=1000))
    try:
        started = _start(service, tmp_path, "review-each", {"files": ["x" * 400]})
        assert started["children"] == []
        failed = started["waitingOn"]["failed"]
        assert failed.startswith("the context of its child run of workflow `code-review` would be 1")
        assert failed.endswith("bytes as JSON, over the server's limit of 1000 (maxContextBytes)")
        assert service.runs.store.list_runs(parent_id=started["runId"]) == []
        events = service.runs.store.events(started["runId"])
        assert events[-1].type == "rejected" and events[-1].data["issues"] == [failed]
    finally:
        service.close()


def _calls(flow_id: str, target: str, *, parallel: bool = False) -> dict[str, Any]:
    """A workflow whose loop starts `target` as a child run for each item."""
    flow = review_each(target=target) | {"id": flow_id, "name": flow_id}
    loop = flow["steps"][0]["loop"]
    if parallel:
        loop.update({"parallel": True, "maxParallel": 2, "as": "reviews"})
    flow["steps"][0]["body"][0]["context"] = {"files": ["{{file}}"]}
    return flow


def test_a_workflow_that_would_start_itself_again_through_a_parallel_loop_fails_the_step_naming_the_cycle(
    tmp_path: Path,
) -> None:
    service = _service(tmp_path, _calls("fan", "fan-back", parallel=True), _calls("fan-back", "fan"))
    try:
        top = _start(service, tmp_path, "fan", {"files": ["x.py"]})
        branch = top["branches"][0]["runId"]
        below = service.call("workflow_resume", {"runId": branch})
        back = below["children"][0]["runId"]
        shown = service.call("workflow_resume", {"runId": back})
        assert shown["workflowId"] == "fan-back" and shown["children"] == []
        assert shown["waitingOn"]["failed"] == (
            "workflow `fan` would start itself again (`fan` → `fan-back` → `fan`): a cycle is not started"
        )
        assert len(service.runs.store.list_runs(limit=100)) == 3  # the parent, its branch, one child
    finally:
        service.close()


def test_a_workflow_starting_itself_fails_its_first_sub_workflow_step(tmp_path: Path) -> None:
    service = _service(tmp_path, _calls("again", "again"))
    try:
        top = _start(service, tmp_path, "again", {"files": ["x.py"]})
        assert top["children"] == []
        assert top["waitingOn"]["failed"] == (
            "workflow `again` would start itself again (`again` → `again`): a cycle is not started"
        )
    finally:
        service.close()
