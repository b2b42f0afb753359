"""The result of one check: what it looked for, what it found, and the evidence."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from handrail.model.workflow import StepCheck


@dataclass(frozen=True, slots=True)
class CheckResult:
    type: str  # command | file | git
    passed: bool
    message: str  # the workflow's message for the check
    description: str  # what the check looks for, in words
    why: str  # what was found: the reason it passed or failed
    pointer: str  # where the check is in the workflow file
    argv: tuple[str, ...] | None = None  # the program that ran, and its arguments
    exit_code: int | None = None  # negative: killed by that signal
    duration_ms: int | None = None
    output: str | None = None  # the end of the combined stdout and stderr
    timed_out: bool = False

    def to_event(self) -> dict[str, Any]:
        """JSON-ready, for a run's `check` event; fields that do not apply are left out."""
        event: dict[str, Any] = {
            "check": self.type,
            "passed": self.passed,
            "message": self.message,
            "description": self.description,
            "why": self.why,
            "pointer": self.pointer,
        }
        if self.argv is not None:
            event["argv"] = list(self.argv)
        if self.exit_code is not None:
            event["exitCode"] = self.exit_code
        if self.duration_ms is not None:
            event["durationMs"] = self.duration_ms
        if self.output is not None:
            event["output"] = self.output
        if self.timed_out:
            event["timedOut"] = True
        return event

    def issue(self) -> tuple[str, str]:
        """(issue, suggestion) for an answer that refuses the step, as rules give them."""
        issue = f"{self.message}: {self.why}"
        if self.output:
            issue += f"\n--- end of output ---\n{self.output}"
        return issue, f"Make this hold, then submit the step again: {self.description}."


def result(check: StepCheck, passed: bool, why: str, **evidence: Any) -> CheckResult:
    return CheckResult(check.type, passed, check.message, check.description, why, check.pointer, **evidence)
