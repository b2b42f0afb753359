"""The bundled workflows: each compiles without a single diagnostic, a scripted agent
walks each to completion (loops really iterate, branches really branch), and between
them they show every feature of the workflow language.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from handrail.compiler import compile_path
from handrail.expr.ast import All, Any_, Compare, Expr, Not
from handrail.expr.parse import parse_condition
from handrail.model.errors import Findings
from handrail.model.workflow import Loop, Step, Workflow
from tests.conftest import ROOT, bundled_files
from tests.helpers.walker import Walk, engine_call, walk
from tests.helpers.wire import wire_validate

DAY_ONE = {
    "coding-task",
    "bug-investigation",
    "code-review",
    "documentation-update",
    "test-plan",
    "refactoring",
    "release-checklist",
    "workflow-authoring",
}
SCHEMA_URL = "https://handrail.dev/schemas/workflow/v1.json"
TEMPLATE = re.compile(r"\{\{\s*[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z0-9_$]+)*\s*\}\}")
OnStep = Callable[[dict[str, Any], Walk], None]


# --- helpers -------------------------------------------------------------------


@cache
def workflow(workflow_id: str) -> Workflow:
    compiled = compile_path(ROOT / "workflows" / f"{workflow_id}.json")
    assert compiled.workflow is not None, [d.render() for d in compiled.diagnostics]
    return compiled.workflow


def run(workflow_id: str, context: dict[str, Any] | None = None, on_step: OnStep | None = None) -> Walk:
    """Walk a bundled workflow like an agent that starts with `context` and completes every step."""
    compiled = workflow(workflow_id)
    record = walk(engine_call(compiled), compiled, context=context, on_step=on_step)
    assert record.results[-1]["isComplete"] is True
    return record


def offered(record: Walk, step_id: str) -> list[dict[str, Any]]:
    """The step views the engine offered for `step_id`, in order."""
    return [r["step"] for r in record.results if r.get("step") and r["step"]["id"] == step_id]


def loop_body_steps(compiled: Workflow, loop: Loop) -> set[str]:
    return {sid for sid, node in compiled.nodes.items() if isinstance(node, Step) and node.loop == loop.id}


def documents() -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in bundled_files()]


def every_step(steps: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for step in steps:
        yield step
        if isinstance(step.get("body"), list):
            yield from every_step(step["body"])


def every_rule(criteria: Any) -> Iterator[dict[str, Any]]:
    """Every rule and every composition in a `validationCriteria` value."""
    if isinstance(criteria, list):
        for item in criteria:
            yield from every_rule(item)
    elif isinstance(criteria, dict):
        yield criteria
        for key in ("and", "or"):
            yield from every_rule(criteria.get(key, []))
        if "not" in criteria:
            yield from every_rule(criteria["not"])


def every_condition(step: dict[str, Any]) -> Iterator[Any]:
    if "runCondition" in step:
        yield step["runCondition"]
    if not isinstance(step.get("requireConfirmation", False), bool):
        yield step["requireConfirmation"]
    if "condition" in step.get("loop", {}):
        yield step["loop"]["condition"]
    for rule in every_rule(step.get("validationCriteria")):
        if "condition" in rule:
            yield rule["condition"]


def operators(tree: Expr) -> Iterator[str]:
    if isinstance(tree, Compare):
        yield tree.op
    elif isinstance(tree, All | Any_):
        yield "and" if isinstance(tree, All) else "or"
        for item in tree.items:
            yield from operators(item)
    elif isinstance(tree, Not):
        yield "not"
        yield from operators(tree.item)


def parse(condition: Any) -> Expr:
    report = Findings()
    tree = parse_condition(condition, "", report)
    problems = [f"{f.code} {f.message}" for f in report.findings]
    assert not problems, (condition, problems)
    return tree


@cache
def features() -> Counter[str]:
    """Every language feature the bundled workflows use, counted."""
    found: Counter[str] = Counter()
    for doc in documents():
        for key in ("metaGuidance", "functionDefinitions", "modelHint"):
            if doc.get(key):
                found[key] += 1
        for step in every_step(doc["steps"]):
            for key in ("agentRole", "guidance", "modelHint", "functionReferences", "functionDefinitions"):
                if step.get(key):
                    found[key] += 1
            confirmation = step.get("requireConfirmation")
            if isinstance(confirmation, bool):
                found["requireConfirmation: boolean"] += 1
            elif confirmation is not None:
                found["requireConfirmation: conditional"] += 1
            for condition in every_condition(step):
                if isinstance(condition, str):
                    found["condition in text form"] += 1
                for op in operators(parse(condition)):
                    found[f"operator {op}"] += 1
            for rule in every_rule(step.get("validationCriteria")):
                if "type" in rule:
                    found[f"rule {rule['type']}"] += 1
                    if rule["type"] == "regex" and rule.get("flags"):
                        found["rule regex with flags"] += 1
                    if "condition" in rule:
                        found["rule with a condition"] += 1
                else:
                    found[f"rule composition {next(iter(rule))}"] += 1
            if step.get("type") == "loop":
                kind = step["loop"]["type"]
                if kind == "for":
                    count = step["loop"]["count"]
                    kind += " with a context variable" if isinstance(count, str) else " with a number"
                found[f"loop {kind}"] += 1
            for key in ("title", "prompt", "agentRole"):
                if TEMPLATE.search(step.get(key) or ""):
                    found["template"] += 1
                if re.search(r"\{\{\s*\w+\.\w+", step.get(key) or ""):
                    found["dotted template"] += 1
    return found


# --- (a) every bundled workflow compiles cleanly ----------------------------------


def test_the_eight_day_one_workflows_are_bundled() -> None:
    assert {path.stem for path in bundled_files()} >= DAY_ONE


@pytest.mark.parametrize("path", bundled_files(), ids=lambda p: p.stem)
def test_every_bundled_workflow_compiles_with_no_diagnostics_at_all(path: Path) -> None:
    compiled = compile_path(path)
    assert [d.render() for d in compiled.diagnostics] == []
    assert compiled.workflow is not None


@pytest.mark.parametrize("path", bundled_files(), ids=lambda p: p.stem)
def test_every_bundled_workflow_names_its_schema_category_and_version(path: Path) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["$schema"] == SCHEMA_URL
    assert document["id"] == path.stem
    assert document["category"]
    assert document["version"] == "1.0.0"


# --- (b) a scripted agent walks every bundled workflow to the end ----------------------


@pytest.mark.parametrize("path", bundled_files(), ids=lambda p: p.stem)
def test_every_bundled_workflow_walks_to_completion_and_its_loops_iterate(path: Path) -> None:
    record = run(path.stem)
    compiled = workflow(path.stem)
    assert set(record.steps) <= set(compiled.nodes)
    for loop in (n for n in compiled.nodes.values() if isinstance(n, Loop)):
        times = Counter(sid for sid in record.steps if sid in loop_body_steps(compiled, loop))
        assert times and max(times.values()) > 1, f"the body of loop `{loop.id}` ran at most once"


PARTS = [
    {"title": "Add the config parser", "files": ["src/config.py"], "check": "pytest tests/test_config.py"},
    {"title": "Read the new option", "files": ["src/cli.py"], "check": "app --help shows --retries"},
    {"title": "Document the option", "files": ["README.md"], "check": "the README example runs"},
]


def test_coding_task_implements_each_planned_part_in_turn_with_that_part_in_the_prompt() -> None:
    context = {"taskSize": "medium", "touchesPublicApi": False, "openQuestions": 0, "planParts": PARTS}
    record = run("coding-task", context)
    assert record.steps == [
        "understand",
        "plan",
        "implement-part",
        "implement-part",
        "implement-part",
        "verify",
    ]
    parts = offered(record, "implement-part")
    assert [p["title"] for p in parts] == [
        f"Part {i} of 3: {part['title']}" for i, part in enumerate(PARTS, 1)
    ]
    assert '["src/cli.py"]' in parts[1]["prompt"]
    assert "app --help shows --retries" in parts[1]["prompt"]
    assert offered(record, "plan")[0]["requireConfirmation"] is False


def test_coding_task_asks_open_questions_and_confirms_the_plan_of_a_large_task() -> None:
    context = {"taskSize": "large", "touchesPublicApi": False, "openQuestions": 2, "planParts": PARTS[:1]}
    record = run("coding-task", context)
    assert record.steps[:3] == ["understand", "clarify", "plan"]
    assert "your 2 open question(s)" in offered(record, "clarify")[0]["prompt"]
    assert offered(record, "plan")[0]["requireConfirmation"] is True
    assert offered(record, "verify")[0]["requireConfirmation"] is True


def test_bug_investigation_tests_hypotheses_until_the_root_cause_is_confirmed() -> None:
    def second_experiment_confirms(result: dict[str, Any], record: Walk) -> None:
        if result["step"]["id"] == "test-hypothesis":
            record.context["rootCauseFound"] = record.steps.count("test-hypothesis") == 2

    record = run("bug-investigation", {"reproduced": True, "severity": "high"}, second_experiment_confirms)
    assert record.steps.count("form-hypothesis") == 2
    assert [s["title"] for s in offered(record, "form-hypothesis")] == ["Hypothesis 1", "Hypothesis 2"]
    assert "gather-evidence" not in record.steps
    assert "escalate" not in record.steps
    assert record.steps[-3:] == ["fix", "regression-test", "write-up"]
    assert offered(record, "write-up")[0]["requireConfirmation"] is True


def test_bug_investigation_escalates_instead_of_fixing_when_no_hypothesis_holds() -> None:
    record = run("bug-investigation", {"reproduced": False, "rootCauseFound": False, "severity": "low"})
    assert record.steps.count("test-hypothesis") == 5
    assert "gather-evidence" in record.steps
    assert "escalate" in record.steps
    assert "fix" not in record.steps and "regression-test" not in record.steps
    assert offered(record, "write-up")[0]["requireConfirmation"] is False


def test_code_review_reviews_every_changed_file_and_adds_the_passes_the_change_calls_for() -> None:
    context = {
        "targetBranch": "release/2.3",
        "changedFiles": 4,
        "linesChanged": 120,
        "changeAreas": ["database"],
    }
    record = run("code-review", context)
    assert [s["title"] for s in offered(record, "review-file")] == [
        f"Review file {i} of 4" for i in range(1, 5)
    ]
    assert "release-branch-policy" in record.steps and "database-pass" in record.steps
    assert "suggest-split" not in record.steps and "security-pass" not in record.steps
    assert offered(record, "write-review")[0]["requireConfirmation"] is False


def test_code_review_suggests_splitting_a_huge_change_and_confirms_a_security_review() -> None:
    context = {
        "targetBranch": "main",
        "changedFiles": 2,
        "linesChanged": 1500,
        "changeAreas": ["api", "security"],
    }
    record = run("code-review", context)
    assert "suggest-split" in record.steps and "security-pass" in record.steps
    assert "release-branch-policy" not in record.steps and "database-pass" not in record.steps
    assert offered(record, "write-review")[0]["requireConfirmation"] is True


def test_documentation_update_edits_every_affected_document_and_skips_user_notes_when_internal() -> None:
    targets = ["README.md", "docs/cli.md", "docs/config.md"]
    record = run(
        "documentation-update", {"docTargets": targets, "audience": "internal", "changeKinds": ["fix"]}
    )
    edits = offered(record, "update-doc")
    assert [e["title"] for e in edits] == [f"Update {t} ({i} of 3)" for i, t in enumerate(targets, 1)]
    assert "Open docs/cli.md" in edits[1]["prompt"]
    assert "upgrade-notes" not in record.steps and "changelog-entry" not in record.steps


def test_documentation_update_writes_upgrade_notes_and_a_changelog_entry_for_a_breaking_change() -> None:
    context = {"docTargets": ["README.md"], "audience": "external", "changeKinds": ["feature", "breaking"]}
    record = run("documentation-update", context)
    assert record.steps == [
        "find-affected-docs",
        "update-doc",
        "upgrade-notes",
        "changelog-entry",
        "check-docs",
    ]


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        (
            {"riskLevel": "low", "currentCoverage": 95, "hasUi": True},
            ["map-behaviour", "list-cases", "write-plan"],
        ),
        (
            {"riskLevel": "high", "currentCoverage": 40, "hasUi": True},
            ["map-behaviour", "coverage-gaps", "list-cases", "challenge-cases", "ui-journeys", "write-plan"],
        ),
        (
            {"riskLevel": "medium", "currentCoverage": 85, "hasUi": False},
            ["map-behaviour", "list-cases", "challenge-cases", "write-plan"],
        ),
    ],
    ids=["low-risk-well-covered", "high-risk-poorly-covered", "medium-risk-no-ui"],
)
def test_test_plan_adds_coverage_adversarial_and_ui_steps_only_where_the_code_needs_them(
    context: dict[str, Any], expected: list[str]
) -> None:
    assert run("test-plan", context).steps == expected


def test_refactoring_applies_one_step_at_a_time_until_none_remain() -> None:
    def one_step_done(result: dict[str, Any], record: Walk) -> None:
        if result["step"]["id"] == "apply-step":
            record.context["remainingSteps"] -= 1

    record = run("refactoring", {"behaviourPinned": True, "remainingSteps": 3}, one_step_done)
    assert [s["title"] for s in offered(record, "apply-step")] == [f"Refactoring step {i}" for i in (1, 2, 3)]
    assert "characterisation-tests" not in record.steps
    assert offered(record, "final-review")[0]["requireConfirmation"] is False


def test_refactoring_pins_behaviour_first_and_asks_the_user_when_the_loop_hits_its_limit() -> None:
    record = run("refactoring", {"behaviourPinned": False, "remainingSteps": 40})
    assert record.steps.index("characterisation-tests") < record.steps.index("plan-steps")
    assert record.steps.count("apply-step") == 25
    assert offered(record, "final-review")[0]["requireConfirmation"] is True


@pytest.mark.parametrize(
    ("version", "published", "skipped"),
    [
        ("3.0.0-rc.1", {"tag-release", "publish-prerelease"}, {"publish-stable", "announce"}),
        ("3.1.0", {"tag-release", "publish-stable", "announce"}, {"publish-prerelease"}),
        ("3.1.2", {"tag-release", "publish-stable"}, {"publish-prerelease", "announce"}),
    ],
)
def test_release_checklist_runs_the_suite_three_times_and_publishes_through_the_right_channel(
    version: str, published: set[str], skipped: set[str]
) -> None:
    record = run("release-checklist", {"releaseVersion": version, "hasBreakingChanges": False})
    assert [s["title"] for s in offered(record, "run-suite")] == [f"Test run {i} of 3" for i in (1, 2, 3)]
    assert published <= set(record.steps)
    assert not skipped & set(record.steps)
    assert offered(record, "bump-version")[0]["title"] == f"Bump the version to {version}"


def test_workflow_authoring_runs_handrail_check_again_until_it_is_clean() -> None:
    def clean_on_second_round(result: dict[str, Any], record: Walk) -> None:
        if result["step"]["id"] == "run-check":
            clean = record.steps.count("run-check") == 2
            record.context.update(checkErrors=0 if clean else 2, checkWarnings=0 if clean else 1)

    record = run("workflow-authoring", {"needsLoops": True}, clean_on_second_round)
    assert [s["title"] for s in offered(record, "run-check")] == ["Check round 1", "Check round 2"]
    assert record.steps == [
        "gather-requirements",
        "outline",
        "design-loops",
        "write-json",
        "run-check",
        "run-check",
        "dry-run",
    ]


# --- the validation rules accept what the prompts ask for, and reject the rest -------

GOOD_PLAN = json.dumps({"parts": [{"title": "Add parser", "files": ["src/p.py"], "check": "pytest"}]})
GOOD_WORKFLOW = json.dumps(
    {
        "$schema": SCHEMA_URL,
        "id": "triage-issue",
        "name": "Triage an issue",
        "description": "Label and route a new issue.",
        "version": "1.0.0",
        "steps": [{"id": "read-issue", "title": "Read the issue", "prompt": "Read it and summarise."}],
    }
)
CASE = {"name": "rejects_an_empty_order", "level": "unit", "given": "no items", "when": "checkout"}
REVIEW = (
    "Adds retry logic with exponential back-off to the HTTP client; the approach is sound.\n\n"
    "Should fix:\n- src/http.py:58 retries POST requests, which are not idempotent\n"
    "Nits:\n- src/http.py:40 `n` could be `attempts`\n"
)
NOTES = "Version 2.0.0 makes retries configurable and fixes two crashes on empty responses. " * 3
VALIDATION_CASES = [
    ("coding-task", "plan", {}, GOOD_PLAN, True),
    ("coding-task", "plan", {}, json.dumps({"parts": []}), False),
    ("coding-task", "plan", {}, "1. Add the parser\n2. Wire it up", False),
    ("coding-task", "implement-part", {}, "Ran `pytest tests/test_p.py`: 4 passed.", True),
    ("coding-task", "implement-part", {}, "Wrote the parser.", False),
    ("bug-investigation", "capture-report", {}, "Expected: a 200.\nActual: a 500 error.", True),
    ("bug-investigation", "capture-report", {}, "The page is broken.", False),
    (
        "bug-investigation",
        "test-hypothesis",
        {"rootCauseFound": True},
        "Confirmed\nsrc/pager.py:42 is off by one.",
        True,
    ),
    (
        "bug-investigation",
        "test-hypothesis",
        {"rootCauseFound": True},
        "Confirmed\nThe pager is off by one.",
        False,
    ),
    (
        "bug-investigation",
        "test-hypothesis",
        {"rootCauseFound": False},
        "Refuted\nThe cache is not involved.",
        True,
    ),
    ("bug-investigation", "test-hypothesis", {}, "I think the pager is wrong.", False),
    ("bug-investigation", "regression-test", {}, "Without the fix: 1 failed. With it: 1 passed.", True),
    ("bug-investigation", "regression-test", {}, "Without the fix: 1 failed.", False),
    ("bug-investigation", "write-up", {"severity": "critical"}, "Root cause and fix explained. " * 10, False),
    ("bug-investigation", "write-up", {"severity": "low"}, "Root cause and fix explained. " * 10, True),
    ("code-review", "review-file", {}, "src/http.py:40 [should-fix] retries forever; cap them.", True),
    ("code-review", "review-file", {}, "No findings: a rename only.", True),
    ("code-review", "review-file", {}, "Looks fine to me.", False),
    ("code-review", "write-review", {}, REVIEW + "\nVerdict: Approve with comments\n", True),
    ("code-review", "write-review", {}, REVIEW + "\nLGTM\n", False),
    (
        "documentation-update",
        "check-docs",
        {"audience": "external"},
        "Ran mkdocs build and the link check. " * 3,
        False,
    ),
    (
        "documentation-update",
        "check-docs",
        {"audience": "internal"},
        "Ran mkdocs build and the link check. " * 3,
        True,
    ),
    (
        "test-plan",
        "list-cases",
        {},
        json.dumps({"cases": [{**CASE, "then": "an error", "priority": "P0"}]}),
        True,
    ),
    (
        "test-plan",
        "list-cases",
        {},
        json.dumps({"cases": [{**CASE, "then": "an error", "priority": "P4"}]}),
        False,
    ),
    ("test-plan", "list-cases", {}, json.dumps({"cases": [CASE]}), False),
    ("release-checklist", "release-notes", {"hasBreakingChanges": False}, NOTES, True),
    ("release-checklist", "release-notes", {"hasBreakingChanges": False}, NOTES + "Migration: TBD", False),
    ("release-checklist", "release-notes", {"hasBreakingChanges": True}, NOTES, False),
    (
        "release-checklist",
        "release-notes",
        {"hasBreakingChanges": True},
        NOTES + "\n## Breaking changes\n",
        True,
    ),
    ("workflow-authoring", "write-json", {}, GOOD_WORKFLOW, True),
    ("workflow-authoring", "write-json", {}, GOOD_WORKFLOW.replace('"steps"', '"stages"'), False),
    ("workflow-authoring", "run-check", {}, "checked 1 file: 0 errors, 0 warnings", True),
]


@pytest.mark.parametrize(
    ("workflow_id", "step_id", "context", "output", "valid"),
    VALIDATION_CASES,
    ids=[
        f"{w}/{s}-{'accepts' if ok else 'rejects'}-{i}" for i, (w, s, _, _, ok) in enumerate(VALIDATION_CASES)
    ],
)
def test_the_validation_rules_accept_what_the_prompt_asks_for_and_reject_the_rest(
    workflow_id: str, step_id: str, context: dict[str, Any], output: str, valid: bool
) -> None:
    result = wire_validate(workflow(workflow_id), step_id, output, context)
    assert result["valid"] is valid, result["issues"]


# --- (c) between them, the bundled workflows show every feature -----------------------

EXPECTED_FEATURES = [
    *(
        f"operator {op}"
        for op in (
            "equals",
            "not_equals",
            "gt",
            "gte",
            "lt",
            "lte",
            "contains",
            "startsWith",
            "endsWith",
            "matches",
            "in",
            "and",
            "or",
            "not",
        )
    ),
    "condition in text form",
    "rule contains",
    "rule regex",
    "rule regex with flags",
    "rule length",
    "rule schema",
    "rule with a condition",
    "rule composition and",
    "rule composition or",
    "rule composition not",
    "loop while",
    "loop until",
    "loop for with a number",
    "loop for with a context variable",
    "loop forEach",
    "template",
    "dotted template",
    "requireConfirmation: boolean",
    "requireConfirmation: conditional",
    "agentRole",
    "guidance",
    "metaGuidance",
    "modelHint",
    "functionDefinitions",
    "functionReferences",
]


@pytest.mark.slow
@pytest.mark.parametrize("feature", EXPECTED_FEATURES)
def test_between_them_the_bundled_workflows_use(feature: str) -> None:
    assert features()[feature] >= 1, f"no bundled workflow uses: {feature}"


def test_the_bundled_workflows_hold_at_least_two_schema_rules() -> None:
    assert features()["rule schema"] >= 2


def test_every_condition_operator_appears_in_json_form_too() -> None:
    keys: set[str] = set()

    def collect(condition: Any) -> None:
        if isinstance(condition, dict):
            keys.update(k for k in condition if k != "var")
            for key in ("and", "or"):
                for item in condition.get(key, []):
                    collect(item)
            if "not" in condition:
                collect(condition["not"])

    for doc in documents():
        for step in every_step(doc["steps"]):
            for condition in every_condition(step):
                collect(condition)
    operators_expected = {f.removeprefix("operator ") for f in EXPECTED_FEATURES if f.startswith("operator ")}
    assert keys >= operators_expected


# --- (d) the command line agrees ---------------------------------------------------------


@pytest.mark.slow
def test_handrail_check_passes_the_bundled_folder_with_zero_errors_and_zero_warnings() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "check", "workflows"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    assert summary == f"checked {len(bundled_files())} files: 0 errors, 0 warnings"
