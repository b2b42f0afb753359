"""`handrail walk`: scripted walks, in-process through injected streams and as a real
command with piped stdin (no terminal)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from handrail.catalog import load_catalog
from handrail.cli import main
from handrail.cli.walk import Walkthrough, parse_value, set_path, walk
from handrail.compiler import compile_text
from handrail.engine import NextResult
from handrail.engine.result_json import next_json
from handrail.model.workflow import Workflow
from tests.conftest import bundled_files

CATALOG = load_catalog()


def bundled(workflow_id: str) -> Workflow:
    workflow = CATALOG.snapshot().get(workflow_id)
    assert workflow is not None
    return workflow


def script(*blocks: str) -> str:
    """Input lines: each argument is one line (an output block is given with its `.`)."""
    return "".join(line + "\n" for line in blocks)


class Recording(Walkthrough):
    """A walk that keeps every workflow_next call and result."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.calls: list[tuple[list[str], Any]] = []
        self.results: list[dict[str, Any]] = []

    def call(self) -> NextResult:
        # recorded in their wire form, as a client would send and read them
        state = None if self.state is None else {"loops": [asdict(p) for p in self.state]}
        self.calls.append((list(self.completed), state))
        result = super().call()
        self.results.append(next_json(result))
        return result


def play(workflow: Workflow, text: str, **options: Any) -> tuple[int, str, Recording]:
    out = io.StringIO()
    walker = Recording(workflow, io.StringIO(text), out, **options)
    code = walker.run()
    return code, out.getvalue(), walker


def headers(transcript: str) -> list[str]:
    return [line for line in transcript.splitlines() if line.startswith("--- step ")]


UNDERSTAND = (
    "The task: add a --limit flag to the export command so users can cap the rows written.\n"
    "It touches src/export.py (the command) and tests/test_export.py. The flag is parsed in\n"
    "the CLI module and passed down to the writer, which stops after N rows.\n"
    "Acceptance criteria\n"
    "- `export --limit 5` writes five rows\n"
    "- without the flag every row is written, as before\n"
)
PARTS = [
    {"title": "Parse the flag", "files": ["src/cli.py"], "check": "pytest tests/test_cli.py"},
    {"title": "Stop the writer early", "files": ["src/export.py"], "check": "pytest tests/test_export.py"},
]
VERIFY = (
    "Ran pytest (all 214 passed), ruff and mypy: clean. Both acceptance criteria verified by hand.\n"
    "Files changed\n- src/cli.py: the --limit flag\n- src/export.py: the writer stops after N rows\n"
    "How to verify\n- run `export --limit 5` and count the rows\n"
)


def coding_task_script() -> str:
    return script(
        *UNDERSTAND.splitlines(),
        ".",
        "openQuestions = 1",
        'taskSize = "small"',
        "touchesPublicApi = false",
        "",
        "1. Should --limit 0 mean no limit? I would say yes.",
        ".",
        "openQuestions = 0",
        "",
        "y",  # clarify asks for confirmation, after its output is checked
        json.dumps({"parts": PARTS}),
        ".",
        "planParts = " + json.dumps(PARTS),
        "",
        "Added the flag; pytest tests/test_cli.py passed.",
        ".",
        "",
        "The writer stops after N rows; pytest tests/test_export.py passed.",
        ".",
        "",
        *VERIFY.splitlines(),
        ".",
        "",
    )


def test_a_full_walk_of_coding_task_with_its_loop_reaches_the_end() -> None:
    code, transcript, walker = play(bundled("coding-task"), coding_task_script())
    assert code == 0, transcript
    assert headers(transcript) == [
        "--- step 1: understand ---",
        "--- step 2: clarify ---",
        "--- step 3: plan ---",
        "--- step 4: implement-part (loop `implement-parts`, iteration 1) ---",
        "--- step 5: implement-part (loop `implement-parts`, iteration 2) ---",
        "--- step 6: verify ---",
    ]
    assert "## Part 1 of 2: Parse the flag" in transcript
    assert "## Part 2 of 2: Stop the writer early" in transcript
    assert "The output does not pass" not in transcript
    assert "This step asks for the user's confirmation" in transcript  # clarify
    assert "Workflow `Coding Task` is complete" in transcript
    assert walker.context["planParts"] == PARTS
    assert walker.results[-1]["isComplete"] is True


def test_the_walk_sends_back_completed_steps_and_state_as_the_spec_says() -> None:
    _, _, walker = play(bundled("coding-task"), coding_task_script())
    calls, results = walker.calls, walker.results
    assert calls[0] == ([], None)
    for (sent, state), previous in zip(calls[1:], results, strict=False):
        if previous["step"] is not None:  # spec/engine.md §3.1: result's list plus the step
            assert sent == [*previous["completedSteps"], previous["step"]["id"]]
        else:
            assert sent == previous["completedSteps"]
        assert state == previous["state"]
    # the loop was running between its iterations, and finished at the end
    assert {"loops": [{"id": "implement-parts", "iteration": 2}]} in [r["state"] for r in results]
    assert results[-1]["state"] == {"loops": []}
    assert "implement-parts" in results[-1]["completedSteps"]


def test_a_failed_validation_is_shown_and_the_step_retried() -> None:
    text = script(
        "Found README.md and docs/api.md.",
        ".",
        "",
        '["README.md"]',  # docTargets, asked for when the workflow blocks
        "fixed it",
        ".",
        "",
        "r",
        "Rewrote the install section of README.md and updated the --limit example.",
        ".",
    )
    code, transcript, walker = play(bundled("documentation-update"), text)
    assert code == 1  # the input ends before the workflow does
    failure = transcript.index("The output does not pass:")
    assert "  - Report the edits to this document in a few lines" in transcript
    assert "Suggestions:\n  - The output has 8 characters; write at least 40." in transcript
    assert transcript.index("Valid.", failure) > failure
    assert headers(transcript) == [
        "--- step 1: find-affected-docs ---",
        "--- step 2: update-doc (loop `update-docs`, iteration 1) ---",
        "--- step 3: changelog-entry ---",
    ]
    assert "Stopped (the input ended) with 2 step(s) done" in transcript
    # the retried step was completed once: the next call sends it back
    assert walker.calls[-1][0] == ["find-affected-docs", "update-doc"]


def test_a_failed_validation_can_be_accepted_anyway() -> None:
    text = script("too short", ".", "", "a")
    code, transcript, walker = play(bundled("coding-task"), text)
    assert code == 1
    assert "The output does not pass" in transcript
    assert headers(transcript) == ["--- step 1: understand ---", "--- step 2: plan ---"]
    assert walker.calls[-1][0] == ["understand"]


def test_quit_stops_the_walk() -> None:
    code, transcript, _ = play(bundled("coding-task"), script("too short", ".", "", "q"))
    assert code == 1
    assert "Stopped (quit) with 0 step(s) done" in transcript
    code, transcript, _ = play(bundled("coding-task"), script(":q"))
    assert code == 1 and "Stopped (quit)" in transcript


def test_missing_context_is_asked_for_with_the_values_the_conditions_look_for() -> None:
    text = script(
        "Found README.md.",
        ".",
        "",
        '["README.md", "docs/api.md"]',
        "Rewrote the install section of README.md and updated the --limit example.",
        ".",
        "",
        "Updated the API reference for export(): the new limit parameter and its default.",
        ".",
        "",
        "- Export takes a --limit flag to cap the rows written.",
        ".",
        "",
        "Ran mkdocs build --strict: no warnings. grep -r for the old flag name found nothing at all.",
        ".",
        "",
        "",  # changeKinds: blank takes the first value looked for
    )
    code, transcript, walker = play(bundled("documentation-update"), text)
    assert "docTargets (a JSON list: loop `update-docs` goes through it) = " in transcript
    assert '  context.docTargets = ["README.md", "docs/api.md"]' in transcript
    assert "## Update docs/api.md (2 of 2)" in transcript
    prompt = 'changeKinds (the conditions look for "breaking", "deprecation") ["breaking"] = '
    assert prompt in transcript
    assert walker.context["changeKinds"] == "breaking"
    assert headers(transcript)[-1] == "--- step 6: upgrade-notes ---"
    assert code == 1  # the input ended at the upgrade notes


def test_answers_are_json_when_they_parse_and_text_otherwise() -> None:
    assert parse_value("3") == 3
    assert parse_value('["a", "b"]') == ["a", "b"]
    assert parse_value("true") is True
    assert parse_value("small") == "small"
    assert parse_value("'small'") == "'small'"
    context: dict[str, Any] = {"a": 1}
    set_path(context, "a.b.c", 2)
    set_path(context, "x", None)
    assert context == {"a": {"b": {"c": 2}}, "x": None}


def test_context_lines_set_variables_by_name_or_as_an_object() -> None:
    text = script(
        *UNDERSTAND.splitlines(),
        ".",
        "bogus line",
        '{"taskSize": "large", "review": {"by": "ana"}}',
        "review.when = today",
        "{not json",
        "",
    )
    _, transcript, walker = play(bundled("coding-task"), text)
    assert walker.context == {"taskSize": "large", "review": {"by": "ana", "when": "today"}}
    assert "Write `name = value`" in transcript
    assert "That is not a JSON object" in transcript


CONFIRMING = {
    "id": "confirming",
    "name": "Confirming",
    "description": "One step that asks for confirmation, one conditional step.",
    "version": "1.0.0",
    "steps": [
        {"id": "draft", "title": "Draft", "prompt": "Draft it.", "requireConfirmation": True},
        {"id": "polish", "title": "Polish", "prompt": "Polish it.", "runCondition": "mode == 'careful'"},
    ],
}


def compiled(document: dict[str, Any]) -> Workflow:
    workflow = compile_text(json.dumps(document)).workflow
    assert workflow is not None
    return workflow


def test_a_step_that_asks_for_confirmation_can_be_redone() -> None:
    text = script("first draft", ".", "", "r", "second draft", ".", "", "", "careful", "polished", ".", "")
    code, transcript, walker = play(compiled(CONFIRMING), text)
    assert code == 0, transcript
    assert transcript.count("Confirm? [y]es, [r]edo the step, or [q]uit [y] ") == 2
    assert transcript.count("| first draft") == 1 and transcript.count("| second draft") == 1
    assert 'mode (the conditions look for "careful") ["careful"] = careful' in transcript
    assert "Offered because its runCondition holds: mode == 'careful'" in transcript
    assert walker.context == {"mode": "careful"}


CHECKED_AGAINST_WHAT_IT_SETS = {
    "id": "checked-against-what-it-sets",
    "name": "Checked against what it sets",
    "description": "A rule that applies when the step sets `breaking`.",
    "version": "1.0.0",
    "steps": [
        {
            "id": "report",
            "title": "Report",
            "prompt": "Report the change; set breaking to true when it breaks an interface.",
            "validationCriteria": [
                {
                    "type": "contains",
                    "value": "migration",
                    "condition": {"var": "breaking", "equals": True},
                    "message": "A breaking change needs a migration note",
                }
            ],
        }
    ],
}


def test_the_context_a_step_sets_is_asked_for_before_its_output_is_checked() -> None:
    text = script(
        *("Renamed export().", ".", "breaking = true", ""),  # the output, then what the step set
        *("r", "Renamed export(); migration: use write().", ".", ""),  # retried
    )
    code, transcript, walker = play(compiled(CHECKED_AGAINST_WHAT_IT_SETS), text)
    assert code == 0, transcript
    assert transcript.index("context.breaking = true") < transcript.index("The output does not pass:")
    assert "  - A breaking change needs a migration note" in transcript
    assert walker.context == {"breaking": True}


def test_the_initial_context_is_used_and_not_asked_for() -> None:
    code, transcript, _ = play(compiled(CONFIRMING), script("x", ".", "", "y"), context={"mode": "quick"})
    assert code == 0, transcript
    assert "the workflow waits on the context" not in transcript
    assert headers(transcript) == ["--- step 1: draft ---"]


@pytest.mark.parametrize("path", bundled_files(), ids=lambda p: p.stem)
def test_auto_walks_every_bundled_workflow_to_the_end(path: Path) -> None:
    workflow = bundled(path.stem)
    out = io.StringIO()
    code = walk(workflow, io.StringIO(""), out, auto=True)
    transcript = out.getvalue()
    assert code == 0, transcript[-2000:]
    assert "is complete: every step that applies is done" in transcript
    assert "Stopped" not in transcript


def test_auto_picks_the_first_value_looked_for_and_lists_for_loops() -> None:
    out = io.StringIO()
    assert walk(bundled("coding-task"), io.StringIO(), out, auto=True) == 0
    transcript = out.getvalue()
    assert "openQuestions (the conditions look for 0) = 0  (--auto)" in transcript
    assert '= ["first item", "second item"]  (--auto)' in transcript
    assert "(--auto: accepted anyway)" in transcript


def test_echo_follows_the_terminal_unless_told() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert Walkthrough(compiled(CONFIRMING), Terminal(), io.StringIO()).echo is False
    assert Walkthrough(compiled(CONFIRMING), io.StringIO(), io.StringIO()).echo is True
    code, transcript, _ = play(compiled(CONFIRMING), script("hidden", ".", "y", ""), echo=False)
    assert code == 1
    assert "| hidden" not in transcript


# ---------------------------------------------------------------- the command


def run(*args: str, stdin: str = "", cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ("WORKFLOW_STORAGE_PATH", "HANDRAIL_WORKFLOWS", "WORKFLOW_INCLUDE_BUNDLED")
    }
    environ["HOME"] = str(home)
    environ["PYTHONIOENCODING"] = "utf-8"
    return subprocess.run(
        [sys.executable, "-m", "handrail", "walk", *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=environ,
        timeout=60,
    )


@pytest.fixture
def place(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "home").mkdir()
    (tmp_path / "project").mkdir()
    return {"cwd": tmp_path / "project", "home": tmp_path / "home"}


@pytest.mark.slow
def test_the_command_walks_coding_task_from_piped_stdin(place: dict[str, Path]) -> None:
    result = run("coding-task", stdin=coding_task_script(), **place)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    assert len(headers(result.stdout)) == 6
    assert "Workflow `Coding Task` is complete" in result.stdout
    assert result.stderr == ""


@pytest.mark.slow
def test_the_command_auto_walks_with_no_input(place: dict[str, Path]) -> None:
    result = run("bug-investigation", "--auto", "--context", '{"reproduced": true}', **place)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    assert "gather-evidence" not in result.stdout  # reproduced, so no evidence without a reproduction
    assert "is complete" in result.stdout


@pytest.mark.slow
def test_the_command_stops_with_1_when_the_input_ends(place: dict[str, Path]) -> None:
    result = run("coding-task", stdin="only one line\n", **place)
    assert result.returncode == 1
    assert "Stopped (the input ended)" in result.stdout


@pytest.mark.slow
def test_the_command_walks_a_workflow_from_workflows(place: dict[str, Path]) -> None:
    path = place["cwd"] / "confirming.json"
    path.write_text(json.dumps(CONFIRMING), encoding="utf-8")
    result = run(
        "confirming",
        "--no-bundled",
        "--workflows",
        str(path),
        "--auto",
        "--context",
        '{"mode": "x"}',
        **place,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert headers(result.stdout) == ["--- step 1: draft ---"]


@pytest.fixture
def private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process commands read no real user, project or environment workflows."""
    for name in ("WORKFLOW_STORAGE_PATH", "HANDRAIL_WORKFLOWS", "WORKFLOW_INCLUDE_BUNDLED"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)


@pytest.mark.usefixtures("private")
def test_an_unknown_id_is_refused_with_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["walk", "coding-tsk", "--auto"]) == 1
    assert "did you mean `coding-task`?" in capsys.readouterr().err


@pytest.mark.usefixtures("private")
@pytest.mark.parametrize("context", ["{not json", "[1, 2]"])
def test_a_bad_context_is_a_usage_error(context: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["walk", "coding-task", "--context", context]) == 2
    assert "--context" in capsys.readouterr().err


@pytest.mark.usefixtures("private")
def test_a_context_that_is_not_json_is_one_line_in_plain_words_saying_where(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["walk", "coding-task", "--context", '{"taskSize": "small",}']) == 2
    assert capsys.readouterr().err == (
        "handrail walk: --context is not JSON, at column 21: a trailing comma: nothing follows this comma"
        " in its object, and JSON allows no comma there; remove it\n"
    )


@pytest.mark.slow
def test_the_init_sample_walked_with_auto_reads_understand_do_then_report(place: dict[str, Path]) -> None:
    flows = place["cwd"] / "flows"
    made = subprocess.run(
        [sys.executable, "-m", "handrail", "init", "--dir", str(flows)],
        capture_output=True, text=True, cwd=place["cwd"], env={**os.environ, "HOME": str(place["home"])},
        timeout=60,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    result = run("my-first-workflow", "--no-bundled", "--workflows", str(flows), "--auto", **place)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [h.split(": ")[1] for h in headers(result.stdout)] == ["understand ---", "do-it ---", "report ---"]
    assert result.stdout.rstrip().endswith("3 output(s) met their step's rules; no step walked has checks.")


@pytest.mark.slow
def test_auto_says_no_checks_ran_and_how_many_outputs_met_their_rules(place: dict[str, Path]) -> None:
    found = '{"reproduced": true, "rootCauseFound": true}'
    result = run("bug-investigation", "--auto", "--context", found, **place)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    assert "every check passed" not in result.stdout
    assert "walk does not run this step's 1 check(s); a run's server does." in result.stdout
    last = result.stdout.rstrip().splitlines()[-1]
    assert "no checks ran: the 2 check(s) of the steps walked run only in a run (workflow_start)" in last
    assert "did not and were accepted anyway" in last


def test_a_typed_walk_counts_the_outputs_that_met_their_rules_and_the_checks_it_did_not_run() -> None:
    out = io.StringIO()
    assert walk(bundled("coding-task"), io.StringIO(coding_task_script()), out) == 0
    last = out.getvalue().rstrip().splitlines()[-1]
    assert last == (
        "6 output(s) met their step's rules; no checks ran: the 2 check(s) of the steps walked "
        "run only in a run (workflow_start), on the server."
    )
