"""Checks: evidence the server gathers itself, in a run's workspace.

The run layer records `git_baseline(workspace)` when a run starts, and calls
`evaluate_checks(step.checks, workspace, context, baseline, config, workflow.origin)`
after a step's output passes its rules; the step is accepted only when every result
passed. Each result's `to_event()` is a run's `check` event; a failed one's `issue()`
goes into the answer. See spec/checks.md.

Names are imported on first use: a server reads its CheckConfig at start-up without
loading the evaluators (subprocess and the like).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from handrail.lazy import lazy_attributes

_PUBLIC = {
    "CheckConfig": "handrail.checks.config",
    "check_config": "handrail.checks.config",
    "parse_command": "handrail.checks.config",
    "parse_commands_variable": "handrail.checks.config",
    "evaluate_checks": "handrail.checks.evaluate",
    "Baseline": "handrail.checks.git",
    "git_baseline": "handrail.checks.git",
    "CheckResult": "handrail.checks.result",
}

if TYPE_CHECKING:
    from handrail.checks.config import CheckConfig, check_config, parse_command, parse_commands_variable
    from handrail.checks.evaluate import evaluate_checks
    from handrail.checks.git import Baseline, git_baseline
    from handrail.checks.result import CheckResult


__getattr__ = lazy_attributes("handrail.checks", _PUBLIC)


__all__ = [
    "Baseline",
    "CheckConfig",
    "CheckResult",
    "check_config",
    "evaluate_checks",
    "git_baseline",
    "parse_command",
    "parse_commands_variable",
]
