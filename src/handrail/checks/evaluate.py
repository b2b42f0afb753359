"""The one entry point the run layer calls: a step's checks -> their results."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence

from handrail.checks.config import CheckConfig
from handrail.checks.files import check_files
from handrail.checks.git import Baseline, check_git
from handrail.checks.processes import decode_tail, environment, run
from handrail.checks.result import CheckResult, result
from handrail.model.workflow import CommandCheck, Context, FileCheck, StepCheck, WorkflowOrigin

ALLOW_HINT = "start the server with --allow-commands (or set HANDRAIL_ALLOW_COMMANDS=1)"


def evaluate_checks(
    checks: Sequence[StepCheck],
    workspace: str,
    context: Context,
    baseline: Baseline | None,
    config: CheckConfig,
    origin: WorkflowOrigin,
) -> list[CheckResult]:
    """The result of every check that applies (its condition holds in `context`), in
    order. Each check runs, whatever the others gave, so all failures are reported.
    `baseline` is the run's record from its start (git `changes` needs it); `origin` is
    the workflow's: only a workflow from a configured source runs commands."""
    try:
        root: str | None = os.path.realpath(workspace)
    except OSError as exc:
        root, unusable = None, f"the workspace `{workspace}` cannot be resolved: {exc.strerror or exc}"
    results: list[CheckResult] = []
    for check in checks:
        if check.condition is not None and not check.condition.holds(context):
            continue  # as a rule whose condition does not hold: it does not apply
        if root is None:
            results.append(result(check, False, unusable))
        elif not os.path.isdir(root):
            results.append(result(check, False, f"the workspace `{workspace}` is not a folder"))
        else:
            results.append(_one(check, root, baseline, config, origin))
    return results


def _one(
    check: StepCheck, root: str, baseline: Baseline | None, config: CheckConfig, origin: WorkflowOrigin
) -> CheckResult:
    try:
        if isinstance(check, CommandCheck):
            return _command(check, root, config, origin)
        if isinstance(check, FileCheck):
            found = check_files(check, root, config.max_entries, config.max_read_bytes)
            return result(check, found.passed, found.why)
        passed, why = check_git(check, root, baseline, config.git_timeout_seconds)
        return result(check, passed, why)
    except OSError as exc:  # a check that cannot look has failed, and says why
        where = f" ({exc.filename})" if exc.filename else ""
        why = f"the check could not look in the workspace: {exc.strerror or exc}{where}"
        return result(check, False, why)


def _command(check: CommandCheck, root: str, config: CheckConfig, origin: WorkflowOrigin) -> CheckResult:
    if origin != "source":
        return result(
            check,
            False,
            "this workflow was sent by a client, not read from a source the server's user "
            "configured, so it cannot run commands",
        )
    argv = check.argv
    if check.command is not None:
        configured = config.commands.get(check.command)
        if configured is None:
            known = ", ".join(f"`{n}`" for n in sorted(config.commands)) or "none"
            return result(
                check,
                False,
                f"no command `{check.command}` is configured on this server (configured: {known}); "
                f'start it with --command {check.command}="..." or set HANDRAIL_COMMANDS',
            )
        argv = configured
    if not config.allow_commands:
        return result(
            check,
            False,
            f"command checks are not allowed on this server, so `{shlex.join(argv)}` did not run: "
            + ALLOW_HINT,
        )
    timeout = min(check.timeout_seconds or config.default_timeout_seconds, config.max_timeout_seconds)
    done = run(argv, root, timeout, config.output_tail_bytes, env=environment())
    output = decode_tail(done.output, done.truncated)
    evidence = {"argv": argv, "duration_ms": done.duration_ms, "output": output}
    if done.error is not None:
        return result(check, False, done.error, **evidence)
    if done.timed_out:
        return result(
            check,
            False,
            f"`{shlex.join(argv)}` ran past its time limit of {timeout:g} s and was killed, "
            "with every process it started",
            timed_out=True,
            **evidence,
        )
    code = done.exit_code
    assert code is not None
    if code < 0:
        why = f"`{shlex.join(argv)}` was killed by signal {-code}"
    else:
        why = f"`{shlex.join(argv)}` exited with {code}"
        if code != check.exit_code:
            why += f", not {check.exit_code}"
    return result(check, code == check.exit_code, why, exit_code=code, **evidence)
