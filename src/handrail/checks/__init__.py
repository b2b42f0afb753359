"""Checks: evidence the server gathers itself, in a run's workspace.

The run layer records `git_baseline(workspace)` when a run starts, and calls
`evaluate_checks(step.checks, workspace, context, baseline, config, workflow.origin)`
after a step's output passes its rules; the step is accepted only when every result
passed. Each result's `to_event()` is a run's `check` event; a failed one's `issue()`
goes into the answer. See spec/checks.md.
"""

from handrail.checks.config import CheckConfig, check_config, parse_command, parse_commands_variable
from handrail.checks.evaluate import all_passed, evaluate_checks
from handrail.checks.git import Baseline, git_baseline
from handrail.checks.result import CheckResult

__all__ = [
    "Baseline",
    "CheckConfig",
    "CheckResult",
    "all_passed",
    "check_config",
    "evaluate_checks",
    "git_baseline",
    "parse_command",
    "parse_commands_variable",
]
