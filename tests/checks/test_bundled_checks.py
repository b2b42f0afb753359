"""The bundled workflows use checks where they belong, and show them to an agent."""

from __future__ import annotations

from handrail.model.workflow import CommandCheck, GitCheck, Step
from tests.helpers.wire import wire_next
from tests.test_bundled_workflows import workflow


def _checks(workflow_id: str, step_id: str) -> tuple[object, ...]:
    step = workflow(workflow_id).nodes[step_id]
    assert isinstance(step, Step)
    return step.checks


def _runs_test(checks: tuple[object, ...]) -> bool:
    return any(isinstance(c, CommandCheck) and c.command == "test" and not c.argv for c in checks)


def test_the_coding_workflows_run_the_configured_test_command_and_want_changes() -> None:
    for workflow_id, step_id in (("coding-task", "verify"), ("refactoring", "final-review")):
        checks = _checks(workflow_id, step_id)
        assert _runs_test(checks), workflow_id
        assert any(isinstance(c, GitCheck) and c.changes for c in checks), workflow_id
    assert _runs_test(_checks("bug-investigation", "regression-test"))
    assert any(isinstance(c, GitCheck) and c.changes for c in _checks("bug-investigation", "fix"))
    assert _runs_test(_checks("refactoring", "apply-step"))


def test_the_release_checklist_wants_a_clean_tree_and_a_passing_suite() -> None:
    for step_id in ("check-release-commit", "tag-release"):
        assert any(isinstance(c, GitCheck) and c.clean for c in _checks("release-checklist", step_id))
    assert _runs_test(_checks("release-checklist", "run-suite"))


def test_no_bundled_workflow_runs_a_literal_command() -> None:
    for workflow_id in ("coding-task", "bug-investigation", "refactoring", "release-checklist"):
        for node in workflow(workflow_id).nodes.values():
            for check in getattr(node, "checks", ()):
                assert not isinstance(check, CommandCheck) or check.command is not None


def test_the_coding_task_shows_its_checks_when_it_reaches_verify() -> None:
    compiled = workflow("coding-task")
    done = [sid for sid in compiled.sequence if sid != "verify"]
    result = wire_next(compiled, done, {"taskSize": "small", "openQuestions": 0, "planParts": []})
    assert result["step"]["id"] == "verify"
    assert result["step"]["checks"] == [
        "The project's test command passes (the configured command `test` exits with 0)",
        "The working tree has changes: the task changed code (the workspace has changes since the run began)",
    ]
    assert "In a run, the server verifies for itself:" in result["guidance"]["prompt"]
