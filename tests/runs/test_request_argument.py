"""Who asks is an argument: the service and the run operations read the request they
are given (handrail.model.request), never a context variable, and a call whose client must
first ask its person returns that question as a result."""

from __future__ import annotations

import ast
import json
import threading
from pathlib import Path

from handrail.catalog import load_catalog
from handrail.model.approvals import InputRequired
from handrail.model.request import Request
from handrail.protocol.surface.approvals import AnsweredOnRetry, input_required
from handrail.service.core import Service, later_runs

SRC = Path(__file__).resolve().parents[2] / "src" / "handrail"
GATED = {
    "id": "gated",
    "name": "Gated",
    "description": "A step a person approves.",
    "version": "1.0.0",
    "steps": [{"id": "plan", "title": "Plan", "prompt": "Write the plan.", "requireConfirmation": True}],
}


def _service(tmp_path: Path) -> Service:
    flows = tmp_path / "flows"
    flows.mkdir()
    (flows / "gated.json").write_text(json.dumps(GATED))
    return Service(load_catalog(flows, bundled=False), runs=later_runs(f"sqlite:///{tmp_path / 'runs.db'}"))


def test_a_continue_whose_client_must_ask_its_person_returns_the_question_as_a_result(tmp_path: Path) -> None:
    service = _service(tmp_path)
    try:
        alice = Request(owner="alice")
        run = service.call("workflow_start", {"workflowId": "gated", "goal": "Plan it"}, alice)
        asking = Request(owner="alice", approver=AnsweredOnRetry(None, None, "alice"))
        arguments = {"runId": run["runId"], "stepId": "plan", "output": "The plan."}
        asked = service.call("workflow_continue", arguments, asking)
        assert isinstance(asked, InputRequired)
        assert asked.question.run_id == run["runId"] and asked.question.step_id == "plan"
        wire = input_required(asked)  # the protocol's wording of the same question
        assert wire["resultType"] == "input_required"
        assert wire["requestState"] == asked.question.request_state
        assert wire["inputRequests"]["approval"]["method"] == "elicitation/create"
        # asked by nobody who can be asked, the same run only waits for `handrail runs approve`
        waiting = service.call("workflow_continue", {"runId": run["runId"], "stepId": "plan"}, alice)
        assert waiting["status"] == "awaiting_approval" and "approval" in waiting
    finally:
        service.close()


def test_two_people_asking_at_once_from_two_threads_each_see_only_their_own_runs(tmp_path: Path) -> None:
    service = _service(tmp_path)
    seen: dict[str, list[str]] = {}
    try:
        started = {
            person: service.call(
                "workflow_start", {"workflowId": "gated", "goal": person}, Request(owner=person)
            )
            for person in ("alice", "bob")
        }

        def listing(person: str) -> None:
            runs = service.call("workflow_resume", {}, Request(owner=person))["runs"]
            seen[person] = [r["runId"] for r in runs]

        threads = [threading.Thread(target=listing, args=(p,)) for p in ("alice", "bob")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert seen == {person: [started[person]["runId"]] for person in ("alice", "bob")}
    finally:
        service.close()


def test_no_module_keeps_who_asks_in_a_context_variable() -> None:
    """Only the budget (model/budget.py says why) and whether a compile keeps its patterns
    (patterns/caching.py) live in context variables: neither says who asks."""
    holders = sorted(
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if any(
            isinstance(node, ast.Name | ast.Attribute)
            and (node.id if isinstance(node, ast.Name) else node.attr) == "ContextVar"
            for node in ast.walk(ast.parse(path.read_text("utf-8")))
        )
    )
    assert holders == ["model/budget.py", "patterns/caching.py"]


def test_the_run_operations_hold_no_mcp_wire_shapes() -> None:
    runs = "\n".join(path.read_text("utf-8") for path in (SRC / "runs").glob("*.py"))
    for shape in ("elicitation/create", "input_required", "inputRequests", "requestedSchema"):
        assert f'"{shape}"' not in runs, shape
