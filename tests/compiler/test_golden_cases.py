"""Golden cases: spec/cases/compiler/<case>/workflow.json must give exactly the
diagnostics in expected.json (code, severity, pointer, line, column, in order), and
the full rendered output of every case is snapshotted (messages and hints included)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from handrail.compiler import Compiled, compile_path, compile_text
from handrail.compiler.codes import CODES
from tests.conftest import ROOT, SPEC

CASES_DIR = SPEC / "cases" / "compiler"
CASES = sorted(p for p in CASES_DIR.iterdir() if p.is_dir())
KEYS = ("code", "severity", "pointer", "line", "column")
# codes no single file can produce: H210 compares two files (the catalog reports it);
# H604 needs configured commands (tests/checks/test_cli.py); H214 and H215 look at the
# sub-workflows of the files checked together (tests/cli/test_check.py)
NOT_PER_FILE = {"H210", "H604", "H214", "H215"}


def _compile(case: Path) -> Compiled:
    source = case / "workflow.json"
    return compile_path(source, display=source.relative_to(ROOT).as_posix())


def _expected(case: Path) -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads((case / "expected.json").read_text("utf-8"))
    return loaded


def test_there_are_golden_cases() -> None:
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_case_folder_holds_an_input_and_its_expectations(case: Path) -> None:
    assert sorted(p.name for p in case.iterdir()) == ["expected.json", "workflow.json"]
    expected = _expected(case)
    assert isinstance(expected, list)
    for item in expected:
        assert set(item) == set(KEYS), item
        assert item["code"] in CODES
        assert item["severity"] in ("error", "warning")


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_case_gives_exactly_the_expected_diagnostics(case: Path) -> None:
    compiled = _compile(case)
    got = [{key: getattr(d, key) for key in KEYS} for d in compiled.diagnostics]
    assert got == _expected(case)
    has_errors = any(d["severity"] == "error" for d in got)
    assert (compiled.workflow is None) == has_errors


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_case_rendered_output_matches_its_snapshot(case: Path, snapshot: Any) -> None:
    compiled = _compile(case)
    rendered = "\n".join(d.render() for d in compiled.diagnostics) or "(no diagnostics)"
    assert rendered == snapshot


@pytest.mark.parametrize("case", [c for c in CASES if c.name.startswith("clean-")], ids=lambda p: p.name)
def test_clean_cases_compile_without_any_diagnostic(case: Path) -> None:
    compiled = _compile(case)
    assert compiled.diagnostics == ()
    assert compiled.workflow is not None
    assert compiled.workflow.id == "workflow"


def test_inputs_use_the_id_workflow_so_the_file_name_check_stays_quiet() -> None:
    # The convention of the README: every input is workflow.json with "id": "workflow",
    # so H207 appears only in the case written to provoke it.
    with_h207 = sorted(c.name for c in CASES if any(d["code"] == "H207" for d in _expected(c)))
    assert with_h207 == ["id-differs-from-file-name"]


def test_every_per_file_code_has_a_golden_case() -> None:
    used = {d["code"] for case in CASES for d in _expected(case)}
    assert set(CODES) - NOT_PER_FILE <= used
    assert used <= set(CODES)


def test_every_case_is_documented_in_the_readme() -> None:
    readme = (CASES_DIR / "README.md").read_text("utf-8")
    missing = [c.name for c in CASES if f"`{c.name}`" not in readme]
    assert missing == []


# ---- the spec documents stay in step with the code ----------------------------------

DIAGNOSTICS_DOC = SPEC / "diagnostics.md"
FORMAT_DOC = SPEC / "workflow-format.md"


def test_diagnostics_doc_has_a_section_for_every_code() -> None:
    text = DIAGNOSTICS_DOC.read_text("utf-8")
    sections = re.findall(r"^### (H\d{3})$", text, re.MULTILINE)
    assert sections == sorted(CODES)
    for code, summary in CODES.items():
        assert f"| [{code}](#{code.lower()}) |" in text
        assert f"| {summary} |" in text, code


def test_diagnostics_doc_gives_each_code_the_severity_the_compiler_uses() -> None:
    text = DIAGNOSTICS_DOC.read_text("utf-8")
    documented = dict(re.findall(r"^\| \[(H\d{3})\]\(#h\d{3}\) \| (error|warning) \|", text, re.MULTILINE))
    assert set(documented) == set(CODES)
    for case in CASES:
        for d in _expected(case):
            assert d["severity"] == documented[d["code"]], (case.name, d)


def _schema_field_names(node: Any) -> set[str]:
    names: set[str] = set()
    if isinstance(node, dict):
        names |= set(node.get("properties", {}))
        for value in node.values():
            names |= _schema_field_names(value)
    elif isinstance(node, list):
        for value in node:
            names |= _schema_field_names(value)
    return names


def test_format_doc_describes_every_field_of_the_schema() -> None:
    schema = json.loads((SPEC / "workflow.schema.json").read_text("utf-8"))
    text = FORMAT_DOC.read_text("utf-8")
    missing = sorted(name for name in _schema_field_names(schema) if f"`{name}`" not in text)
    assert missing == []


def test_format_doc_complete_example_compiles_cleanly() -> None:
    text = FORMAT_DOC.read_text("utf-8")
    example = re.search(r"A complete small example:\n\n```json\n(.*?)```", text, re.DOTALL)
    assert example is not None
    compiled = compile_text(example.group(1), "code-review.json")
    assert compiled.diagnostics == ()
