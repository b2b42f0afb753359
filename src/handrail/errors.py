"""Errors that cross the library boundary, and the diagnostics the compiler reports.

Every request-time error carries its JSON-RPC code and a `data` object, so the
protocol layer maps it to the wire without knowing what went wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem in a workflow file, located by JSON pointer and by line and column."""

    code: str
    severity: Severity
    message: str
    pointer: str = ""
    line: int = 1
    column: int = 1
    hint: str | None = None
    file: str = "<memory>"

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "pointer": self.pointer,
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
        }

    def render(self) -> str:
        text = f"{self.file}:{self.line}:{self.column}: {self.severity} {self.code} {self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


def explained(title: str, data: Any) -> str:
    """An error's message: its title and what is wrong, taken from its `data`, since
    many clients (the MCP SDKs among them) show the message and drop the data."""
    if not isinstance(data, dict) or ": " in title:  # not data to explain, or explained already
        return title
    details = data.get("details")
    if isinstance(details, str) and details:
        what = details
    elif isinstance(data.get("stepId"), str) and isinstance(data.get("workflowId"), str):
        what = f"`{data['stepId'][:100]}` in workflow `{data['workflowId'][:100]}`"
    else:
        keys = ("workflowId", "stepId", "method", "uri")
        named = next((data[k] for k in keys if isinstance(data.get(k), str)), None)
        if named is None:
            return title
        what = f"`{named[:100]}`"
    close = data.get("didYouMean")
    if isinstance(close, list) and close and all(isinstance(c, str) for c in close):
        what += "; did you mean " + " or ".join(f"`{c}`" for c in close) + "?"
    return f"{title}: {what}"


class HandrailError(Exception):
    """An error a caller can act on; `code` is its JSON-RPC error code."""

    code = -32000
    title = "Server error"

    def __init__(self, message: str | None = None, data: dict[str, Any] | None = None) -> None:
        self.message = message or explained(self.title, data)
        self.data: dict[str, Any] = data or {}
        super().__init__(self.message)


class InvalidParams(HandrailError):
    code = -32602
    title = "Invalid params"


class WorkflowNotFound(HandrailError):
    code = -32001
    title = "Workflow not found"


class InvalidWorkflow(HandrailError):
    code = -32002
    title = "Invalid workflow"


class StepNotFound(HandrailError):
    code = -32003
    title = "Step not found"


class ValidationEngineError(HandrailError):
    code = -32004
    title = "Validation error"


class StateError(HandrailError):
    code = -32005
    title = "State error"


class StorageError(HandrailError):
    code = -32006
    title = "Storage error"


class SecurityError(HandrailError):
    code = -32007
    title = "Security error"


@dataclass(slots=True)
class DiagnosticSink:
    """Collects diagnostics during one compilation (every problem, not the first)."""

    items: list[Diagnostic] = field(default_factory=list)

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.items)


class ErrorWatch:
    """A diagnostics reporter that passes everything on to `report` and remembers
    whether an error went by (a stage then knows its own output is unusable)."""

    __slots__ = ("failed", "report")

    def __init__(self, report: Callable[..., None]) -> None:
        self.report = report
        self.failed = False

    def __call__(
        self,
        code: str,
        severity: str,
        message: str,
        pointer: str,
        hint: str | None = None,
        offset: int | None = None,
    ) -> None:
        self.failed = self.failed or severity == "error"
        self.report(code, severity, message, pointer, hint, offset)


def ignore(
    code: str,
    severity: str,
    message: str,
    pointer: str,
    hint: str | None = None,
    offset: int | None = None,
) -> None:
    """A reporter that drops everything: for a second look at a source already reported."""


class RunNotFound(HandrailError):
    """No run has this id (or, with per-person tokens, none of the caller's)."""

    code = -32008
    title = "Run not found"


class StepNotCurrent(HandrailError):
    """The submission names a step the run is not at; `data.currentStep` says where it is."""

    code = -32009
    title = "Step is not current"


class RunNotActive(HandrailError):
    """The run is completed or abandoned; `data.status` says which."""

    code = -32010
    title = "Run is not active"
