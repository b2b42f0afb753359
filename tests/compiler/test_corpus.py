"""The WorkRail v0.8.6 corpus: every file WorkRail accepts compiles with no errors;
the three it rejects are flagged precisely (code, pointer, line, column)."""

from __future__ import annotations

from pathlib import Path

import pytest

from handrail.compiler import compile_path
from tests.conftest import CORPUS, CORPUS_REJECTED, corpus_accepted, corpus_files

pytestmark = pytest.mark.corpus  # served or walked workflows come from the WorkRail corpus

# Warnings a file WorkRail accepts may carry: an id that differs from the file name,
# and a template naming a variable only the agent sets.
TOLERATED_WARNINGS = {"H207", "H500", "H307"}

# H307: conditions on variables that no text of the file names, so the agent is never
# told to set them. Each is a real finding: the prompts ask for "scope", "expertise",
# "a path" or "assumptions" in words, or (implementationInProgress) nothing at all.
CORPUS_H307 = {
    "spec-examples/conditional-workflow-example.json": {"taskScope", "userExpertise"},
    "workflows/coding-task-workflow-with-loops.json": {"implementationInProgress"},
    "workflows/intelligent-test-case-generation.json": {"assumptionAccepted", "newGapsDetected"},
    "workflows/learner-centered-course-workflow.json": {"designPath"},
}

INVALID = "spec-examples/invalid-workflow.json"
NO_VERSION = "spec-examples/ai-task-prompt-workflow.json"
DASHBOARD = "workflows/examples/dashboard-template-workflow.json"

# spec-examples/invalid-workflow.json: its seven defects, each where it is.
SEVEN_DEFECTS = [
    ("H103", "/id", 2, 9, "'INVALID_ID_WITH_CAPS' does not match"),
    ("H103", "/name", 3, 11, "the text is empty"),
    ("H103", "/preconditions/1", 8, 5, "the text is empty"),
    ("H103", "/clarificationPrompts/1", 12, 5, "duplicate entry 'Valid question?'"),
    ("H103", "/steps", 14, 12, "the list is empty"),
    ("H103", "/metaGuidance/1", 17, 5, "duplicate entry 'This is a valid guidance'"),
    ("H101", "/extraField", 19, 3, "unknown field `extraField`"),
]

DASHBOARD_FIELDS = [
    ("/tags", 6, 3),
    ("/steps/0/expectedOutput", 15, 7),
    ("/examples", 42, 3),
    ("/tips", 147, 3),
    ("/autoRecognitionPatterns", 163, 3),
]


def _name(path: Path) -> str:
    return path.relative_to(CORPUS).as_posix()


def test_the_corpus_is_there_with_its_three_rejected_files(corpus: Path) -> None:
    names = {_name(p) for p in corpus_files()}
    assert names >= CORPUS_REJECTED
    assert len(corpus_accepted()) == len(names) - 3 >= 25


@pytest.mark.parametrize("path", corpus_accepted(), ids=_name)
def test_every_accepted_file_compiles_without_errors(path: Path) -> None:
    compiled = compile_path(path)
    assert compiled.errors == (), [d.render() for d in compiled.errors]
    assert compiled.workflow is not None
    assert {d.code for d in compiled.warnings} <= TOLERATED_WARNINGS


def test_every_loop_kind_of_the_corpus_compiles() -> None:
    kinds = set()
    for path in corpus_accepted():
        workflow = compile_path(path).workflow
        assert workflow is not None
        kinds |= {getattr(node, "kind", None) for node in workflow.nodes.values()}
    assert {"while", "until", "for", "forEach"} <= kinds


def test_invalid_workflow_has_exactly_its_seven_defects(corpus: Path) -> None:
    compiled = compile_path(corpus / INVALID)
    assert compiled.workflow is None
    got = [(d.code, d.pointer, d.line, d.column) for d in compiled.diagnostics]
    assert got == [defect[:4] for defect in SEVEN_DEFECTS]
    assert all(d.severity == "error" for d in compiled.diagnostics)


@pytest.mark.parametrize("defect", SEVEN_DEFECTS, ids=lambda d: d[1])
def test_invalid_workflow_flags_each_defect_where_it_is(
    corpus: Path, defect: tuple[str, str, int, int, str]
) -> None:
    code, pointer, line, column, words = defect
    compiled = compile_path(corpus / INVALID)
    found = [d for d in compiled.diagnostics if d.pointer == pointer]
    assert len(found) == 1
    d = found[0]
    assert (d.code, d.severity, d.line, d.column) == (code, "error", line, column)
    assert words in d.message
    assert d.file == str(corpus / INVALID)


def test_invalid_workflow_hints_at_a_valid_id(corpus: Path) -> None:
    compiled = compile_path(corpus / INVALID)
    first = compiled.diagnostics[0]
    assert first.hint is not None and "`invalid-id-with-caps`" in first.hint


def test_ai_task_prompt_workflow_lacks_only_its_version(corpus: Path) -> None:
    compiled = compile_path(corpus / NO_VERSION)
    assert compiled.workflow is None
    assert [(d.code, d.severity, d.pointer, d.line, d.column) for d in compiled.diagnostics] == [
        ("H100", "error", "", 1, 1)
    ]
    assert "`version`" in compiled.diagnostics[0].message


def test_dashboard_template_has_exactly_its_unknown_fields(corpus: Path) -> None:
    compiled = compile_path(corpus / DASHBOARD)
    assert compiled.workflow is None
    got = [(d.code, d.severity, d.pointer, d.line, d.column) for d in compiled.diagnostics]
    assert got == [("H101", "error", pointer, line, column) for pointer, line, column in DASHBOARD_FIELDS]
    for d in compiled.diagnostics:
        name = d.pointer.rsplit("/", 1)[-1]
        assert d.message == f"unknown field `{name}`"
        assert d.hint


@pytest.mark.slow
def test_compiling_the_corpus_twice_gives_the_same_diagnostics() -> None:
    for path in corpus_files():
        assert compile_path(path).diagnostics == compile_path(path).diagnostics


def test_the_corpus_conditions_on_unmentioned_variables_are_exactly_the_known_ones() -> None:
    found: dict[str, set[str]] = {}
    for path in corpus_accepted():
        for d in compile_path(path).warnings:
            if d.code == "H307":
                name = d.message.split("`")[1]
                found.setdefault(_name(path), set()).add(name)
    assert found == CORPUS_H307
