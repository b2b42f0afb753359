"""What `handrail drive` writes at the end: JSON, Markdown, JUnit XML."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

from handrail.drive.claude_code import Usage
from handrail.drive.driver import Outcome, StepReport
from handrail.drive.report import as_json, junit, markdown


def outcome() -> Outcome:
    plan = StepReport("plan", "Plan | the change", 0, 1, True, [Usage(100, 20, cost_usd=0.5, reported=True)])
    build = StepReport("build", "Build it", 1, 2, False, [Usage(cost_usd=0.25), Usage(cost_usd=0.25)])
    build.issues = ["Say <passed> & mean it"]
    build.checks = ["the tests pass: failed"]
    build.work = "The branches of the parallel loop `each` did their work here:\n- branch 0: /w/b0"
    return Outcome(1, "run_1", "active", "step 'build' was not accepted", "task", [plan, build])


def test_the_json_has_each_step_with_its_attempts_cost_and_issues() -> None:
    found = as_json(outcome())
    assert found["costUsd"] == 1.0 and found["exitCode"] == 1
    assert [(s["stepId"], s["attempts"], s["accepted"], s["tokens"]) for s in found["steps"]] == [
        ("plan", 1, True, 120),
        ("build", 2, False, 0),
    ]
    assert found["steps"][1]["issues"] == ["Say <passed> & mean it"]
    assert found["steps"][1]["checks"] == ["the tests pass: failed"] and "work" in found["steps"][1]


def test_the_markdown_is_a_table_of_the_steps_with_the_issues_below() -> None:
    text = markdown(outcome())
    assert "| Plan \\| the change | 1 | yes | 120 | 0.5000 |" in text
    assert "Issues of `build`:\n- Say <passed> & mean it" in text
    assert "Checks of `build`, its last attempt:\n- the tests pass: failed" in text
    assert "did their work here:\n- branch 0: /w/b0" in text  # where each branch's work is


def test_the_junit_xml_parses_and_fails_the_step_not_accepted() -> None:
    suite = ElementTree.fromstring(junit(outcome()))
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    failed = [case for case in suite if case.find("failure") is not None]
    assert [case.get("name") for case in failed] == ["build"]
    assert failed[0].find("failure").get("message") == "Say <passed> & mean it"  # type: ignore[union-attr]
