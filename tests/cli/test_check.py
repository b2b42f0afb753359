"""`handrail check` end to end, as a user runs it: `python -m handrail check PATH...`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CORPUS, CORPUS_REJECTED, ROOT, SPEC, corpus_accepted

pytestmark = pytest.mark.slow

CASES = SPEC / "cases" / "compiler"
LINE = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?P<column>\d+): "
    r"(?P<severity>error|warning) (?P<code>H\d{3}) (?P<message>.+)$"
)
SUMMARY = re.compile(r"^checked (\d+) files?: (\d+) errors?, (\d+) warnings?$")
JSON_KEYS = {"file", "line", "column", "pointer", "severity", "code", "message", "hint"}


def check(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handrail", "check", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def case(name: str) -> Path:
    return CASES / name / "workflow.json"


# ---- exit codes ---------------------------------------------------------------------


@pytest.mark.corpus
def test_every_accepted_corpus_file_passes_with_exit_0() -> None:
    result = check(*corpus_accepted())
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 errors" in result.stdout.splitlines()[-1]


@pytest.mark.corpus
def test_the_whole_corpus_fails_with_exit_1() -> None:
    result = check(CORPUS)
    assert result.returncode == 1
    flagged = {Path(m["file"]).relative_to(CORPUS).as_posix() for m in _errors(result.stdout)}
    # the rejected three, and WorkRail's own schema file, which is not a workflow
    assert flagged == CORPUS_REJECTED | {"workflow.schema.json"}


def _errors(text: str) -> list[dict[str, str]]:
    found = [LINE.match(line) for line in text.splitlines()]
    return [m.groupdict() for m in found if m and m["severity"] == "error"]


def test_a_clean_golden_case_exits_0_and_an_error_case_exits_1() -> None:
    assert check(case("clean-every-feature")).returncode == 0
    assert check(case("duplicate-step-ids")).returncode == 1


def test_warnings_alone_exit_0() -> None:
    result = check(case("id-differs-from-file-name"), case("for-count-exceeds-max-iterations"))
    assert result.returncode == 0
    assert result.stdout.splitlines()[-1] == "checked 2 files: 0 errors, 2 warnings"


def test_a_missing_path_exits_2_and_says_which() -> None:
    result = check("no/such/workflow.json")
    assert result.returncode == 2
    assert "no/such/workflow.json" in result.stderr
    assert result.stdout == ""


def test_a_missing_path_among_good_ones_still_exits_2() -> None:
    assert check(case("clean-minimal"), "no-such-file.json").returncode == 2


@pytest.mark.parametrize("args", [[], ["--format", "xml", "spec"], ["--no-such-option", "spec"]])
def test_usage_errors_exit_2(args: list[str]) -> None:
    assert check(*args).returncode == 2


def test_a_folder_is_checked_recursively() -> None:
    result = check(CASES)
    assert result.returncode == 1
    total = len(list(CASES.glob("*/*.json")))  # each case's workflow.json and expected.json
    assert SUMMARY.match(result.stdout.splitlines()[-1])
    assert result.stdout.splitlines()[-1].startswith(f"checked {total} files: ")


# ---- text format --------------------------------------------------------------------


def test_text_lines_are_file_line_column_severity_code_message() -> None:
    target = case("duplicate-ids-inline-loop-body")
    result = check(target)
    lines = result.stdout.splitlines()
    assert len(lines) == 3
    first = LINE.match(lines[0])
    assert first is not None
    assert first.groupdict() == {
        "file": str(target),
        "line": "33",
        "column": "17",
        "severity": "error",
        "code": "H200",
        "message": "duplicate step id `process` (hint: the first `process` is at /steps/1/body/0; "
        "ids must be unique, loop bodies included)",
    }
    assert LINE.match(lines[1]) is not None
    assert lines[2] == "checked 1 file: 2 errors, 0 warnings"


@pytest.mark.corpus
def test_the_summary_counts_every_line_printed() -> None:
    result = check(CORPUS)
    *lines, summary = result.stdout.splitlines()
    matched = [LINE.match(line) for line in lines]
    assert all(matched), [line for line, m in zip(lines, matched, strict=True) if not m]
    counts = SUMMARY.match(summary)
    assert counts is not None
    files, errors, warnings = map(int, counts.groups())
    assert files == len(list(CORPUS.rglob("*.json")))
    assert errors == sum(1 for m in matched if m and m["severity"] == "error")
    assert warnings == sum(1 for m in matched if m and m["severity"] == "warning")


def test_a_syntax_error_is_reported_where_it_is() -> None:
    target = case("json-syntax-missing-comma")
    result = check(target)
    assert result.returncode == 1
    first = result.stdout.splitlines()[0]
    assert first == f"{target}:10:7: error H001 invalid JSON: a comma is missing before this value"


# ---- json format --------------------------------------------------------------------


@pytest.mark.corpus
def test_json_format_is_an_array_of_diagnostics_with_exactly_the_documented_keys() -> None:
    result = check("--format", "json", CORPUS / "spec-examples", case("loop-body-missing-step"))
    assert result.returncode == 1
    items = json.loads(result.stdout)
    assert isinstance(items, list) and items
    for item in items:
        assert set(item) == JSON_KEYS
        assert isinstance(item["line"], int) and isinstance(item["column"], int)
        assert item["severity"] in ("error", "warning")
        assert item["hint"] is None or isinstance(item["hint"], str)
    assert any(item["hint"] is None for item in items)
    missing = [i for i in items if i["code"] == "H201"]
    assert missing == [
        {
            "file": str(case("loop-body-missing-step")),
            "line": 16,
            "column": 15,
            "pointer": "/steps/0/body",
            "severity": "error",
            "code": "H201",
            "message": "loop body `proces-item` names no step of this workflow",
            "hint": "did you mean `process-item`?",
        }
    ]


def test_json_format_of_a_clean_file_is_an_empty_array() -> None:
    result = check("--format", "json", case("clean-minimal"))
    assert result.returncode == 0
    assert json.loads(result.stdout) == []


def test_json_format_matches_each_golden_expectation() -> None:
    names = ["json-syntax-nan", "condition-text-syntax-error", "loop-cycle-by-reference", "unreachable-step"]
    result = check("--format", "json", *(case(n) for n in names))
    items = json.loads(result.stdout)
    for name in names:
        expected = json.loads((CASES / name / "expected.json").read_text("utf-8"))
        got = [
            {k: i[k] for k in ("code", "severity", "pointer", "line", "column")}
            for i in items
            if i["file"] == str(case(name))
        ]
        assert got == expected, name


# ---- SARIF --------------------------------------------------------------------------


def _sarif(*args: str | Path) -> tuple[int, dict[str, Any]]:
    result = check("--format", "sarif", *args)
    loaded: dict[str, Any] = json.loads(result.stdout)
    return result.returncode, loaded


@pytest.mark.corpus
def test_sarif_has_the_required_structure_of_2_1_0() -> None:
    code, log = _sarif(CORPUS)
    assert code == 1
    assert log["version"] == "2.1.0"
    assert "sarif" in log["$schema"] and "2.1.0" in log["$schema"]
    assert isinstance(log["runs"], list) and len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "handrail"
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids))
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"]
    results = run["results"]
    assert results
    for result in results:
        assert result["ruleId"] in rule_ids
        assert result["level"] in ("error", "warning", "note", "none")
        assert isinstance(result["message"]["text"], str) and result["message"]["text"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"]
        region = physical["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        for logical in location.get("logicalLocations", []):
            assert logical["fullyQualifiedName"].startswith("/")


def test_sarif_results_say_what_the_text_format_says() -> None:
    target = case("loop-body-missing-step")
    code, log = _sarif(target)
    assert code == 1
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "H201"
    assert result["level"] == "error"
    assert result["message"]["text"] == (
        "loop body `proces-item` names no step of this workflow (did you mean `process-item`?)"
    )
    location = result["locations"][0]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == target.as_posix()
    assert location["physicalLocation"]["region"] == {"startLine": 16, "startColumn": 15}
    assert location["logicalLocations"][0]["fullyQualifiedName"] == "/steps/0/body"


def test_sarif_of_clean_files_has_no_results_and_exits_0() -> None:
    code, log = _sarif(case("clean-minimal"), case("clean-workrail-style"))
    assert code == 0
    assert log["version"] == "2.1.0"
    assert log["runs"][0]["results"] == []


def test_sarif_warnings_are_level_warning() -> None:
    code, log = _sarif(case("for-count-exceeds-max-iterations"))
    assert code == 0
    assert [(r["ruleId"], r["level"]) for r in log["runs"][0]["results"]] == [("H209", "warning")]


def test_a_text_too_short_or_too_long_says_the_bound(tmp_path: Path) -> None:
    workflow = {
        "id": "ab",
        "name": "n" * 200,
        "description": "d",
        "version": "1.0.0",
        "steps": [{"id": "do", "title": "t", "prompt": "p"}],
    }
    path = tmp_path / "bounds.json"
    path.write_text(json.dumps(workflow, indent=2), "utf-8")
    result = check(path)
    assert result.returncode == 1
    messages = {(m["line"], m["message"]) for m in _errors(result.stdout)}
    assert messages == {
        ("2", "'ab' is too short: at least 3 characters"),
        ("3", "the text is too long: at most 128 characters, not 200"),
        ("8", "'do' is too short: at least 3 characters"),
    }


def test_a_folder_with_no_workflow_files_is_said_on_stderr(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# not a workflow\n", "utf-8")
    result = check(tmp_path)
    assert result.returncode == 0
    assert result.stderr == f"handrail check: warning: no workflow files (*.json) in {tmp_path}\n"
    assert result.stdout == "checked 0 files: 0 errors, 0 warnings\n"


def test_a_check_of_an_unknown_type_does_not_hide_the_other_checks_problems(tmp_path: Path) -> None:
    steps = [
        {
            "id": "one",
            "title": "One",
            "prompt": "Do it.",
            "checks": [
                {"type": "nosuch", "run": ["true"], "message": "an unknown type"},
                {"type": "command", "run": [], "message": "an empty run"},
                {"type": "file", "path": "../outside.txt", "message": "a path that leaves"},
            ],
        },
        {
            "id": "two",
            "title": "Two",
            "prompt": "Do it.",
            "checks": [{"type": "git", "message": "neither changes nor clean"}],
        },
    ]
    document = {"id": "all-at-once", "name": "N", "description": "D.", "version": "1.0.0", "steps": steps}
    path = tmp_path / "Another_Name.json"
    path.write_text(json.dumps(document, indent=2), "utf-8")
    result = check(path)
    assert result.returncode == 1
    found = {(m["code"], m["line"]) for m in map(LINE.match, result.stdout.splitlines()) if m}
    assert found == {("H207", "2"), ("H103", "13"), ("H602", "21"), ("H606", "26"), ("H600", "36")}
    assert result.stdout.splitlines()[-1] == "checked 1 file: 4 errors, 1 warning"


def test_check_finds_a_sub_workflow_naming_no_workflow_and_workflows_that_start_each_other(
    tmp_path: Path,
) -> None:
    def flow(wid: str, *steps: dict[str, Any]) -> None:
        document = {
            "id": wid,
            "name": wid,
            "description": "A flow.",
            "version": "1.0.0",
            "steps": list(steps),
        }
        (tmp_path / f"{wid}.json").write_text(json.dumps(document, indent=2), "utf-8")

    flow(
        "a-flow",
        {"id": "one", "title": "One", "prompt": "One."},
        {"id": "call-b", "workflow": "b-flow"},
        {"id": "call-review", "workflow": "code-reveiw", "context": {"target": "x"}},
    )
    flow("b-flow", {"id": "call-a", "title": "Back", "workflow": "a-flow"})
    flow("code-review", {"id": "read", "title": "Read", "prompt": "Read."})
    flow("lone", {"id": "call-ok", "workflow": "code-review"})
    found = check(tmp_path, "--format", "json")
    assert found.returncode == 1, found.stderr
    problems = [(Path(d["file"]).name, d["code"], d["pointer"], d["line"]) for d in json.loads(found.stdout)]
    assert problems == [
        ("a-flow.json", "H214", "/steps/2/workflow", 18),
        ("b-flow.json", "H215", "/steps/0/workflow", 10),
    ]
    text = check(tmp_path).stdout
    assert (
        "`call-review` starts workflow `code-reveiw`, which is not found (hint: did you mean `code-review`?)"
        in text
    )
    assert "closes a cycle of sub-workflows: `a-flow` -> `b-flow` -> `a-flow`" in text
    assert check(tmp_path / "code-review.json", tmp_path / "lone.json").returncode == 0
