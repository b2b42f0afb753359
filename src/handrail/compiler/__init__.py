"""Workflow JSON in; an immutable compiled workflow, or every problem located, out.

Stages: decode -> parse JSON -> schema (a generated validator; jsonschema only
when it fails, for the full list) -> semantic checks and closures -> what the engine
and the wire derive from the workflow (`derive`) -> positions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from handrail.compiler.build import build_workflow
from handrail.compiler.checks import Commands
from handrail.compiler.derive import derive
from handrail.compiler.readable import not_said_already, readable_checks
from handrail.compiler.schema_errors import schema_diagnostics
from handrail.compiler.source import SourceMap, parse_json
from handrail.model.codec import source_revision
from handrail.model.errors import Diagnostic, Finding, Findings
from handrail.model.limits import MAX_FILE_BYTES
from handrail.model.wide_integers import may_hold_wide_integers
from handrail.model.workflow import Workflow, WorkflowOrigin
from handrail.rules.schemas import check_workflow

DEFAULT_MAX_BYTES = MAX_FILE_BYTES

__all__ = ["DEFAULT_MAX_BYTES", "Compiled", "compile_path", "compile_text"]


Located = tuple[Diagnostic, ...]


@dataclass(frozen=True, slots=True)
class Compiled:
    """The outcome of compiling one file. Diagnostics are located (line, column) on
    first use: a file served without complaint never pays for its source map."""

    file: str
    workflow: Workflow | None  # None when there is any error
    pending: Located | Callable[[], Located] = field(repr=False)

    @property
    def diagnostics(self) -> Located:
        if callable(self.pending):
            object.__setattr__(self, "pending", self.pending())  # cached; the value never changes
        assert not callable(self.pending)
        return self.pending

    @property
    def errors(self) -> Located:
        return tuple(d for d in self.diagnostics if d.severity == "error")

    @property
    def warnings(self) -> Located:
        return tuple(d for d in self.diagnostics if d.severity == "warning")


def _failure(
    file: str, code: str, message: str, line: int = 1, column: int = 1, hint: str | None = None
) -> Compiled:
    return Compiled(file, None, (Diagnostic(code, "error", message, "", line, column, hint, file),))


def compile_path(
    path: str | Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    display: str | None = None,
    commands: Commands | None = None,
) -> Compiled:
    """A file a user put in a configured source (or named to `handrail check`): its
    workflow's origin is "source". `commands`, when given, are the configured command
    names a check may use (unknown ones draw H604)."""
    file = display or str(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        return _failure(file, "H002", f"cannot read the file: {exc.strerror or exc}")
    if len(data) > max_bytes:
        return _failure(
            file,
            "H002",
            f"the file is larger than {max_bytes} bytes",
            hint="raise the limit with --max-file-size, or split the workflow",
        )
    return compile_text(data, file, commands=commands, origin="source")


def compile_text(
    data: str | bytes,
    file: str = "<memory>",
    *,
    commands: Commands | None = None,
    origin: WorkflowOrigin = "submitted",
    parsed: dict[str, Any] | None = None,
    revision: str | None = None,
) -> Compiled:
    """Text from anywhere: its workflow's origin is "submitted" (never runs commands)
    unless the caller vouches that it came from a configured source. A caller that has
    parsed the bytes already (the catalog's listing) or hashed them hands over `parsed`
    (exactly what `parse_json` gives) and `revision` (`source_revision` of the bytes),
    so that neither is done twice."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            before = data[: exc.start].decode("utf-8-sig")  # valid up to the bad byte
            line = before.count("\n") + 1
            column = len(before) - (before.rfind("\n") + 1) + 1
            return _failure(
                file,
                "H002",
                f"the file is not UTF-8: byte {data[exc.start]:#04x} at offset {exc.start}",
                line,
                column,
                "save the file as UTF-8",
            )
    else:
        text = data.removeprefix("\ufeff")  # as utf-8-sig does for bytes
    if not text.strip():
        return _failure(file, "H001", "the file is empty", hint="a workflow is a JSON object")
    if parsed is not None and not may_hold_wide_integers(parsed):
        document: Any = parsed
    else:  # (orjson reads an integer past 64 bits as a float: parse_json reads it exactly)
        document, problem = parse_json(text)
        if problem is not None:
            return _failure(file, "H001", problem.message, problem.line, problem.column)
    report = Findings()
    raw = report.findings

    workflow = None
    schema_failed = False
    late = Findings()  # what the other checks find in a file that fails the schema
    try:  # both validators and the builder recurse; no workflow nests hundreds deep
        if check_workflow(document):
            if revision is None:
                revision = source_revision(text.encode("utf-8", "surrogatepass"))
            workflow = build_workflow(document, revision, file, report, commands=commands, origin=origin)
        else:
            schema_failed = True
            readable_checks(document, text, file, late)
    except RecursionError:
        return _failure(file, "H001", "the workflow is nested too deeply")
    if not raw and not schema_failed:
        return Compiled(file, derive(workflow) if workflow is not None else None, ())
    failed = schema_failed or any(f.severity == "error" for f in raw)

    def locate() -> Located:
        found = list(raw)
        if schema_failed:  # the full list comes from jsonschema, imported only now
            try:
                found.extend(schema_diagnostics(document))
            except RecursionError:
                found.append(Finding("H001", "error", "the workflow is nested too deeply", ""))
            if not found:  # the two validators disagree; never let a bad file through silently
                found.append(Finding("H103", "error", "the workflow does not satisfy the schema", ""))
            found.extend(not_said_already(late.findings, found))
        return _located(found, text, file)

    return Compiled(file, None if failed or workflow is None else derive(workflow), locate)


def _located(raw: list[Finding], text: str, file: str) -> Located:
    where = SourceMap(text)
    diagnostics = []
    for code, severity, message, pointer, hint, offset in raw:
        line, column = where.locate(pointer, offset)
        diagnostics.append(
            Diagnostic(
                code,
                severity,
                message,
                pointer,
                line,
                column,
                hint,
                file,
            )
        )
    diagnostics.sort(key=lambda d: (d.line, d.column, d.code))
    return tuple(diagnostics)
