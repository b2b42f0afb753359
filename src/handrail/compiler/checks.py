"""A step's `checks` -> compiled checks (conditions, globs and regexes compiled once).

Runs on documents that satisfy the schema, so every field has its type; what the
schema cannot say (which fields each type needs and reads, globs, paths that leave
the workspace, programs and command names) is reported here.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

from handrail.expr import ParsedConditions, Reporter, compile_condition
from handrail.model.workflow import CommandCheck, FileCheck, GitCheck, Glob, StepCheck
from handrail.patterns import PatternError, compile_pattern
from handrail.patterns.globs import GlobError, compile_glob
from handrail.rules.closures import BACKTRACKING_HINT, backtracking_message

Commands = Mapping[str, Sequence[str]]

CHECK_FIELDS = {
    "command": ("run", "timeoutSeconds", "exitCode"),
    "file": ("path", "contains"),
    "git": ("changes", "clean", "paths"),
}
COMMON_FIELDS = ("type", "message", "condition")


def compile_checks(
    raw: Sequence[Any],
    at: str,
    report: Reporter,
    *,
    commands: Commands | None = None,
    parsed: ParsedConditions | None = None,
) -> tuple[StepCheck, ...]:
    """Every check that compiled; `commands` (the configured ones, when known) lets an
    unknown command name be reported."""
    out: list[StepCheck] = []
    for index, item in enumerate(raw):
        built = _compile(item, f"{at}/{index}", report, commands, parsed)
        if built is not None:
            out.append(built)
    return tuple(out)


def _compile(
    raw: Mapping[str, Any],
    at: str,
    report: Reporter,
    commands: Commands | None,
    parsed: ParsedConditions | None,
) -> StepCheck | None:
    kind = raw["type"]
    ok = True
    for key in raw:
        if key not in COMMON_FIELDS and key not in CHECK_FIELDS[kind]:
            owner = next(k for k, fields in CHECK_FIELDS.items() if key in fields)
            report.error(
                "H601",
                f"`{key}` belongs to a `{owner}` check, not to a `{kind}` check",
                f"{at}/{key}",
                f"a `{kind}` check reads {', '.join(CHECK_FIELDS[kind])}",
            )
            ok = False
    condition = None
    if "condition" in raw:
        condition = compile_condition(
            raw["condition"], f"{at}/condition", report, what="check condition", parsed=parsed
        )
    message = raw["message"]
    if kind == "command":
        built: StepCheck | None = _command(raw, message, condition, at, report, commands)
    elif kind == "file":
        built = _file(raw, message, condition, at, report)
    else:
        built = _git(raw, message, condition, at, report)
    return built if ok else None


def _command(
    raw: Mapping[str, Any],
    message: str,
    condition: Any,
    at: str,
    report: Reporter,
    commands: Commands | None,
) -> CommandCheck | None:
    if "run" not in raw:
        report.error(
            "H600",
            "a `command` check needs `run`",
            at,
            'add "run": ["program", "argument"] or "run": {"command": "test"}',
        )
        return None
    run = raw["run"]
    exit_code = int(raw.get("exitCode", 0))
    timeout = raw.get("timeoutSeconds")
    expected = f"exits with {exit_code}"
    if isinstance(run, Mapping):
        name = run["command"]
        if commands is not None and name not in commands:
            known = ", ".join(f"`{n}`" for n in sorted(commands)) or "none"
            report.warning(
                "H604",
                f"no command `{name}` is configured (configured: {known})",
                f"{at}/run/command",
                f'start the server with --command {name}="..." or set it in HANDRAIL_COMMANDS',
            )
        argv: tuple[str, ...] = ()
        description = f"the configured command `{name}` {expected}"
    else:
        argv = tuple(run)
        if not argv or not argv[0]:
            report.error(
                "H602",
                "`run` names no program" if argv else "`run` is empty",
                f"{at}/run" if not argv else f"{at}/run/0",
                'write the program and its arguments: ["pytest", "-q"]',
            )
            return None
        program = argv[0]
        if "/" not in program and shutil.which(program) is None:
            report.warning(
                "H603",
                f"`{program}` is not found on PATH here",
                f"{at}/run/0",
                "install it, or name a configured command instead",
            )
        name = None
        description = f"`{shlex.join(argv)}` {expected}"
    return CommandCheck(
        message=message,
        description=description,
        condition=condition,
        argv=argv,
        command=name,
        timeout_seconds=float(timeout) if timeout is not None else None,
        exit_code=exit_code,
        pointer=at,
    )


def _glob(text: str, at: str, report: Reporter) -> Glob | None:
    try:
        return compile_glob(text)
    except GlobError as exc:
        if exc.escapes:
            report.error(
                "H606",
                f"the path leaves the workspace: {exc.message}",
                at,
                "checks look only inside the workspace; write the path relative to it",
                exc.offset,
            )
        else:
            report.error("H605", f"invalid glob: {exc.message}", at, None, exc.offset)
        return None


def _file(
    raw: Mapping[str, Any], message: str, condition: Any, at: str, report: Reporter
) -> FileCheck | None:
    if "path" not in raw:
        report.error("H600", "a `file` check needs `path`", at, 'add "path": "docs/adr/*.md"')
        return None
    glob = _glob(raw["path"], f"{at}/path", report)
    regex = None
    if "contains" in raw:
        try:
            regex = compile_pattern(raw["contains"], "m")
        except PatternError as exc:
            report.error("H400", f"invalid regex: {exc.message}", f"{at}/contains", None, exc.offset)
            return None
        if regex.fallback is not None:
            report.warning("H406", backtracking_message(regex.fallback), f"{at}/contains", BACKTRACKING_HINT)
    if glob is None:
        return None
    description = f"a file matches `{glob.text}`"
    if regex is not None:
        description += f" and one of them contains /{raw['contains']}/"
    return FileCheck(message, description, condition, glob, regex, at)


def _git(raw: Mapping[str, Any], message: str, condition: Any, at: str, report: Reporter) -> GitCheck | None:
    changes, clean = bool(raw.get("changes")), bool(raw.get("clean"))
    if not changes and not clean:
        report.error(
            "H600",
            "a `git` check needs `changes: true`, `clean: true` or both",
            at,
            'add "changes": true (work was done) or "clean": true (nothing left uncommitted)',
        )
        return None
    globs: list[Glob] = []
    ok = True
    for index, text in enumerate(raw.get("paths", ())):
        glob = _glob(text, f"{at}/paths/{index}", report)
        if glob is None:
            ok = False
        else:
            globs.append(glob)
    if not ok:
        return None
    parts = []
    if changes:
        parts.append("the workspace has changes since the run began")
    if clean:
        parts.append("nothing is left uncommitted")
    description = " and ".join(parts)
    if globs:
        description += " (in " + ", ".join(f"`{g.text}`" for g in globs) + ")"
    return GitCheck(message, description, condition, changes, clean, tuple(globs), at)
