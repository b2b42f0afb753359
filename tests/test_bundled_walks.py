"""Each bundled workflow walked to the end as a run, by doing what its prompts say.

A table per workflow says, step by step, what an agent that follows the prompt sends:
the output the prompt asks for, the context keys it names (set as it says), and what
it does in the workspace (edit, commit, tag), in a real git repository with a real
test command. Runs enforce the step's rules and checks, so a prompt that asks for
something the rules refuse fails here. The table sets exactly the context keys the
prompt's sentences about setting name, and every row of it is used.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from handrail.catalog import load_catalog
from handrail.checks import CheckConfig
from handrail.model.request import LOCAL
from handrail.service.core import Service
from tests.checks.workspaces import git
from tests.conftest import BUNDLED

Act = Callable[[Path], None]


@dataclass(frozen=True)
class Do:
    """What the prompt of a step asks of the agent."""

    output: str
    context: dict[str, Any] = field(default_factory=dict)
    act: Act | None = None  # done in the workspace before the output is sent


Row = Do | Callable[[int], Do]  # a step's row, or one per time the step comes (1, 2, ...)
Table = dict[str, Row]

# a backticked name in a sentence of the prompt that says to set something
_SENTENCE = re.compile(r"[^.]*\bset\b[^.]*(?:\.(?=\S)[^.]*)*", re.IGNORECASE)
_NAME = re.compile(r"`([A-Za-z_]\w*)`")


def named_context(prompt: str) -> set[str]:
    """The context keys a prompt tells the agent to set."""
    return {name for sentence in _SENTENCE.findall(prompt) for name in _NAME.findall(sentence)}


def test_named_context_reads_the_sentences_that_say_set() -> None:
    prompt = "List them under `Acceptance criteria`. Then set in context: `taskSize` to 'small'; `open` to 0."
    assert named_context(prompt) == {"taskSize", "open"}
    assert named_context("Run `handrail check` and paste `output`.") == set()


# -- what the agent does in the workspace --------------------------------------------------------


def edit(name: str, text: str) -> Act:
    def act(workspace: Path) -> None:
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as out:
            out.write(text + "\n")

    return act


def commit(message: str, *edits: Act) -> Act:
    def act(workspace: Path) -> None:
        for each in edits:
            each(workspace)
        git(workspace, "add", "-A")
        git(workspace, "commit", "-q", "-m", message)

    return act


def tag(name: str) -> Act:
    return lambda workspace: git(workspace, "tag", "-a", name, "-m", f"Release {name}")


# -- the tables ----------------------------------------------------------------------------------

LONG = " Each claim comes from a file opened or a command run, and names that file or command."
PLAN = [
    {"title": "Parse the retries option", "files": ["app.py"], "check": "python -c 'import app'"},
    {"title": "Document the option", "files": ["README.md"], "check": "the README example runs"},
]

CODING_TASK: Table = {
    "understand": Do(
        "The task: add a retries option to the client so that a failed call is tried again. "
        "It touches app.py (the client) and README.md (its options). I expect to change "
        "those two files." + LONG * 3 + "\n\nAcceptance criteria\n- `--retries 3` retries three times\n",
        {"taskSize": "medium", "touchesPublicApi": False, "openQuestions": 0},
    ),
    "plan": Do(json.dumps({"parts": PLAN}), {"planParts": PLAN}),
    "implement-part": lambda n: Do(
        f"Implemented part {n}, the test first (it failed). Ran {PLAN[n - 1]['check']}: passed.",
        act=edit(PLAN[n - 1]["files"][0], f"# part {n}"),
    ),
    "verify": Do(
        "Ran the suite, the linter and the type checker: all passed. Each acceptance criterion "
        "was checked by running the client with --retries 3.\n\nFiles changed\n- app.py: the option\n"
        "- README.md: documents it\n\nHow to verify\n- python -c 'import app'\n" + LONG
    ),
}

CODING_TASK_WITH_QUESTIONS: Table = {
    **CODING_TASK,
    "understand": Do(
        CODING_TASK["understand"].output,  # type: ignore[union-attr]
        {"taskSize": "large", "touchesPublicApi": True, "openQuestions": 1},
    ),
    "clarify": Do(
        "1. Should retries apply to POST? I would say no: POST is not idempotent. The user agreed.",
        {"openQuestions": 0},
    ),
}

BUG_INVESTIGATION: Table = {
    "capture-report": Do(
        "Expected: the pager shows 10 items per page. Actual: it shows 9, and the last item is "
        "missing. Seen in 2.3.1 on every input; the code path is app.py (paginate).",
        {"severity": "high"},
    ),
    "reproduce": Do(
        "A failing test: test_pager_shows_ten_items calls paginate(range(20)) and asserts 10 items; "
        "it fails with AssertionError: 9 != 10.",
        {"reproduced": True},
    ),
    "form-hypothesis": lambda n: Do(
        f"Hypothesis {n}: the page end is computed with an off-by-one subtraction in paginate, which "
        "drops the last item of every page. Experiment: a focused test on one page of ten."
    ),
    "test-hypothesis": lambda n: (
        Do("Refuted\nThe cache is not involved: the same result without it.", {"rootCauseFound": False})
        if n == 1
        else Do(
            "Confirmed\napp.py:42 subtracts one from the page end, so the last item is cut.",
            {"rootCauseFound": True},
        )
    ),
    "fix": Do(
        "Removed the subtraction at app.py:42; no other caller repeats it.", act=edit("app.py", "# fix")
    ),
    "regression-test": Do(
        "With the fix stashed the new test failed; with the fix in place it passed. The full suite passed.",
        act=edit("test_app.py", "def test_pager(): pass"),
    ),
    "write-up": Do(
        "Symptom: pages showed 9 items. Root cause: app.py:42 subtracted one from the page end. "
        "Fix: the subtraction is gone. Regression test: test_pager_shows_ten_items. No other code "
        "shares the flaw: the only other pager uses slicing." + LONG
    ),
}

CODE_REVIEW: Table = {
    "scope-review": Do(
        "Diff against main, in review order:\n1. app.py\n2. test_app.py\n",
        {"targetBranch": "main", "changedFiles": 2, "linesChanged": 120, "changeAreas": ["api"]},
    ),
    "review-file": lambda n: Do(
        "app.py:12 [should-fix] retries forever; cap them." if n == 1 else "No findings: the tests only."
    ),
    "security-pass": Do("app.py:20 [nit] the URL is logged; drop its query string."),
    "write-review": Do(
        "Adds retries to the client; the approach is sound.\n\nShould fix\n- app.py:12 cap the retries\n"
        "Nits\n- app.py:20 log the URL without its query\n" + LONG + "\nVerdict: Approve with comments\n"
    ),
}

DOCUMENTATION_UPDATE: Table = {
    "find-affected-docs": Do(
        "The change renames --retry to --retries; README.md and docs/cli.md name it.",
        {"docTargets": ["README.md", "docs/cli.md"], "audience": "external", "changeKinds": ["breaking"]},
    ),
    "update-doc": lambda n: Do(
        f"Renamed --retry to --retries in {['README.md', 'docs/cli.md'][n - 1]} and fixed its example.",
        act=edit(["README.md", "docs/cli.md"][n - 1], "Use `--retries N`."),
    ),
    "upgrade-notes": Do(
        "UPGRADING: --retry is now --retries. Before: `app --retry 3`. After: `app --retries 3`.",
        act=edit("UPGRADING.md", "--retry is now --retries"),
    ),
    "changelog-entry": Do(
        "- The option `--retry` is now `--retries`.", act=edit("CHANGELOG.md", "- --retries")
    ),
    "check-docs": Do(
        "Ran the docs build and the link checker: both clean. Searched for --retry: none left. "
        "The changelog entry for users is in CHANGELOG.md."
    ),
}

REFACTORING: Table = {
    "define-goal": Do(
        "Today app.py holds one 200-line function that parses, fetches and prints. The target: "
        "three functions, each with one job, so that each can be tested alone. Behaviour to keep: "
        "the output of `app run`, its exit codes and its error messages." + LONG * 2,
        {"behaviourPinned": True},
    ),
    "plan-steps": Do("1. Extract parse_args from main\n2. Extract fetch from main\n", {"remainingSteps": 2}),
    "apply-step": lambda n: Do(
        f"Applied step {n}; the tests passed; committed it.",
        {"remainingSteps": 2 - n},
        commit(f"Extract step {n} from main", edit("app.py", f"# step {n}")),
    ),
    "final-review": Do(
        "The public interface and the behaviour are unchanged: the same tests pass with no "
        "expectation edited, and the three functions are in place." + LONG
    ),
}

REFACTORING_UNPINNED: Table = {
    **REFACTORING,
    "define-goal": Do(REFACTORING["define-goal"].output, {"behaviourPinned": False}),  # type: ignore[union-attr]
    "characterisation-tests": Do(
        "Wrote characterisation tests for the error messages; they pass on the unchanged code.",
        {"behaviourPinned": True},
        edit("test_app.py", "def test_errors(): pass"),
    ),
}

NOTES = (
    "Version 2.4.0 makes retries configurable and fixes two crashes on empty responses.\n\n"
    "## Breaking changes\nNone.\n\n## Features\n- `--retries`\n\n## Fixes\n- empty responses\n" + LONG
)
RELEASE_CHECKLIST: Table = {
    "choose-version": Do(
        "Since v2.3.0: one feature, two fixes, nothing breaking: 2.4.0.",
        {"releaseVersion": "2.4.0", "hasBreakingChanges": False},
    ),
    "check-release-commit": Do("Commit abc123 in a clean tree: CI passed, no blocker open, locked."),
    "run-suite": lambda n: Do(f"Run {n}: pytest in a fresh venv, 40 s: 120 passed, 0 failed. No flaky test."),
    "bump-version": Do(
        "Set 2.4.0 in pyproject.toml and committed the bump.",
        act=commit("Bump the version to 2.4.0", edit("VERSION", "2.4.0")),
    ),
    "release-notes": Do(NOTES, act=commit("Release notes for 2.4.0", edit("CHANGELOG.md", NOTES))),
    "tag-release": Do("Tagged v2.4.0 and built the artifacts: each says 2.4.0.", act=tag("v2.4.0")),
    "publish-stable": Do("Published to the registry after the user's go-ahead."),
    "announce": Do("Drafted the announcement and showed it to the user."),
    "verify-published": Do(
        "Installed 2.4.0 from the registry into a fresh venv; `app --version` printed 2.4.0 and "
        "one real command ran. The release page shows the notes."
    ),
}

CASES = {"name": "ten_per_page", "level": "unit", "given": "20 items", "when": "paginate", "then": "10"}
TEST_PLAN: Table = {
    "map-behaviour": Do(
        "Entry point: paginate(items, size). Inputs: empty, huge, negative size.",
        {"riskLevel": "high", "currentCoverage": 60, "hasUi": True},
    ),
    "coverage-gaps": Do("paginate: the empty branch is behaviour; the debug log is plumbing."),
    "list-cases": Do(json.dumps({"cases": [{**CASES, "priority": "P0"}]})),
    "challenge-cases": Do("Added a case for a page size larger than the list: a likely off-by-one."),
    "ui-journeys": Do("One journey: open the list, page to the end, see the last item. Chromium."),
    "write-plan": Do(
        "# Test plan\n## Scope\npaginate\n## Out of scope\nthe UI theme\n## Risks\noff-by-one\n"
        "## Test cases\n| name | level | priority |\n## Test data and environments\n"
        "fixtures; the UI journeys run in the Chromium and Firefox browsers\n"
        "## Exit criteria\nall P0 cases pass and line coverage is at least 80%.\n" + LONG * 4
    ),
}

WORKFLOW = {
    "$schema": "https://handrail.dev/schemas/workflow/v1.json",
    "id": "triage-issue",
    "name": "Triage an issue",
    "description": "Label and route a new issue.",
    "version": "1.0.0",
    "category": "support",
    "steps": [{"id": "read-issue", "title": "Read the issue", "prompt": "Read it and summarise."}],
}
WORKFLOW_AUTHORING: Table = {
    "gather-requirements": Do(
        "Goal: triage a new issue. Run by an agent on each new issue. Phases: read, label, route. "
        "One decision: whether it is a bug. Nothing repeats." + LONG,
        {"needsLoops": False},
    ),
    "outline": Do("1. read-issue: Read the issue: know what it asks."),
    "write-json": Do(json.dumps(WORKFLOW), act=edit("workflows/triage-issue.json", json.dumps(WORKFLOW))),
    "run-check": lambda n: Do("checked 1 file: 0 errors, 0 warnings", {"checkErrors": 0, "checkWarnings": 0}),
    "dry-run": Do(
        "Walked triage-issue with workflow_next: one step, no branch, no loop; the prompt was "
        "clear, and no variable was needed that no step set." + LONG
    ),
}

WALKS = [
    pytest.param("coding-task", CODING_TASK, id="coding-task"),
    pytest.param("coding-task", CODING_TASK_WITH_QUESTIONS, id="coding-task-with-open-questions"),
    pytest.param("bug-investigation", BUG_INVESTIGATION, id="bug-investigation"),
    pytest.param("code-review", CODE_REVIEW, id="code-review"),
    pytest.param("documentation-update", DOCUMENTATION_UPDATE, id="documentation-update"),
    pytest.param("refactoring", REFACTORING, id="refactoring"),
    pytest.param("refactoring", REFACTORING_UNPINNED, id="refactoring-with-behaviour-to-pin"),
    pytest.param("release-checklist", RELEASE_CHECKLIST, id="release-checklist"),
    pytest.param("test-plan", TEST_PLAN, id="test-plan"),
    pytest.param("workflow-authoring", WORKFLOW_AUTHORING, id="workflow-authoring"),
]


def test_every_bundled_workflow_has_a_walk() -> None:
    walked = {w.values[0] for w in WALKS}
    assert walked == {path.stem for path in BUNDLED.glob("*.json")}


def _workspace(root: Path) -> Path:
    workspace = root / "workspace"
    workspace.mkdir()
    git(workspace, "-c", "init.defaultBranch=main", "init", "-q")
    (workspace / "app.py").write_text("VERSION = '2.3.0'\n", encoding="utf-8")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "The client")
    return workspace


@pytest.mark.parametrize(
    ("workflow_id", "table"), WALKS, ids=[None if isinstance(w, tuple) else w.id for w in WALKS]
)
def test_a_bundled_workflow_walks_to_its_end_by_doing_what_its_prompts_say(
    workflow_id: str, table: Table, tmp_path: Path
) -> None:
    workspace = _workspace(tmp_path)
    checks = CheckConfig(allow_commands=True, commands={"test": (sys.executable, "-c", "import app")})
    service = Service(load_catalog(BUNDLED, bundled=False), checks=checks)
    try:
        answer = service.call(
            "workflow_start", {"workflowId": workflow_id, "goal": "Walk it", "workspace": str(workspace)}
        )
        run_id, times, steps = answer["runId"], dict[str, int](), list[str]()
        while answer["status"] != "completed":
            step = answer["step"]
            sid = step["id"]
            steps.append(sid)
            times[sid] = times.get(sid, 0) + 1
            assert sid in table, f"{workflow_id}: no row for step `{sid}`; its prompt: {step['prompt']}"
            row = table[sid]
            do = row if isinstance(row, Do) else row(times[sid])
            assert set(do.context) == named_context(step["prompt"]), f"{sid}: the prompt names other keys"
            if do.act is not None:
                do.act(workspace)
            sent: dict[str, Any] = {"runId": run_id, "stepId": sid, "output": do.output}
            if do.context:
                sent["context"] = do.context
            answer = service.call("workflow_continue", sent)
            if answer["status"] == "awaiting_approval":  # a person approves, as the prompt expects
                answer = service.runs.decide(LOCAL, run_id, "approve", person="local")
            assert answer["accepted"] is True, (
                f"{sid}: what its prompt asks is refused: {answer.get('issues')}"
            )
        assert set(steps) == set(table), f"rows for steps never reached: {set(table) - set(steps)}"
    finally:
        service.close()
