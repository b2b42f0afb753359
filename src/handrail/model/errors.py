"""Errors that cross the library boundary, and the diagnostics the compiler reports.

Every request-time error carries its JSON-RPC code and a `data` object, so the
protocol layer maps it to the wire without knowing what went wrong.
"""

from typing import Any, Literal, NamedTuple

from handrail.model.slotted import Slotted

Severity = Literal["error", "warning"]

# JSON-RPC error codes: the standard ones, then those of MCP and of its 2026-07-28 revision.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000  # also: Forbidden, Unauthorized, Not Acceptable... from the HTTP transport
RESOURCE_NOT_FOUND = -32002  # an unknown resource, before 2026-07-28 (then -32602)
HEADER_MISMATCH = -32020  # 2026-07-28: HTTP headers disagree with the body
MISSING_CLIENT_CAPABILITY = -32021  # 2026-07-28
UNSUPPORTED_PROTOCOL_VERSION = -32022  # 2026-07-28: data {supported, requested}


# a class of slots, neither a dataclass nor a NamedTuple: every gate hook imports this
# module, and need not load dataclasses (with inspect and dis) nor pay a NamedTuple's making
class Diagnostic(Slotted):
    """One problem in a workflow file, located by JSON pointer and by line and column."""

    __slots__ = ("code", "column", "file", "hint", "line", "message", "pointer", "severity")

    def __init__(
        self,
        code: str,
        severity: Severity,
        message: str,
        pointer: str = "",
        line: int = 1,
        column: int = 1,
        hint: str | None = None,
        file: str = "<memory>",
    ) -> None:
        self.code = code
        self.severity = severity
        self.message = message
        self.pointer = pointer
        self.line = line
        self.column = column
        self.hint = hint
        self.file = file

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


class RpcError(Exception):
    """A JSON-RPC error: the one type the service, the protocol and both transports
    raise and answer with (`response`), as the MCP SDK's `MCPError` is."""

    code: int
    message: str
    data: Any

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data

    def response(self, rid: Any) -> dict[str, Any]:
        return error_response(rid, self.code, self.message, self.data)


def error_response(rid: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response, as every transport sends it."""
    # "Invalid params: unknown tool `x`", not only "Invalid params": SDKs show the message
    error: dict[str, Any] = {"code": code, "message": explained(message, data)}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": error}


class HandrailError(RpcError):
    """An error a caller can act on: each subclass owns its JSON-RPC `code`, its `title`
    (the message when none is given) and the `fix` text a model is shown."""

    code = -32000
    title = "Server error"

    def __init_subclass__(cls, *, code: int | None = None, title: str | None = None) -> None:
        """`class X(HandrailError, code=..., title=...)`: a kind of error in one line."""
        super().__init_subclass__()
        if code is not None:
            cls.code = code
        if title is not None:
            cls.title = title

    def __init__(self, message: str | None = None, data: dict[str, Any] | None = None) -> None:
        message = message or explained(self.title, data)
        super().__init__(self.code, message, data or {})

    def fix(self) -> str:
        """What a model is told, after the error, to correct its call ("" for nothing)."""
        return ""


class InvalidParams(HandrailError, code=-32602, title="Invalid params"):
    """A call's arguments do not fit the tool or the method."""

    def fix(self) -> str:
        return " Check the tool's inputSchema and call again."


class WorkflowNotFound(HandrailError, code=-32001, title="Workflow not found"):
    """No workflow in service has this id (or its file is broken)."""

    def fix(self) -> str:
        if "file" in self.data:
            return (
                " Its file must be fixed first (`handrail check` lists every problem); "
                "call workflow_list to see the workflows that load."
            )
        close = self.data.get("didYouMean")
        text = f" No workflow has the id {self.data.get('workflowId')!r}."
        return text + (
            f" Did you mean {', '.join(close)}?" if close else " Call workflow_list to see the ids."
        )


class StepNotFound(HandrailError, code=-32003, title="Step not found"):
    """The workflow has no step with this id."""

    def fix(self) -> str:
        return (
            f" Step {self.data.get('stepId')!r} is not in the workflow; call workflow_get to see its steps."
        )


class ValidationEngineError(HandrailError, code=-32004, title="Validation error"):
    """A step's rules could not be applied to an output."""


class StateError(HandrailError, code=-32005, title="State error"):
    """The completed steps and state sent back do not fit the workflow, or a run's state is off."""

    def fix(self) -> str:
        if "runId" in self.data:  # a run's: its state is the server's, nothing to send back
            return " Call the run tool again; workflow_resume shows where the run stands."
        return " Send back the completedSteps and state of the previous workflow_next result unchanged."


class StorageError(HandrailError, code=-32006, title="Storage error"):
    """The run store cannot be opened, read or written."""


class SecurityError(HandrailError, code=-32007, title="Security error"):
    """A call this server refuses to keep runs safe (a tool --runs-only turns off)."""


class Finding(NamedTuple):
    """A diagnostic not yet located in the source: the compiler finds by JSON pointer
    (and, inside a string, by offset) and looks up lines only when asked."""

    code: str
    severity: Severity
    message: str
    pointer: str
    hint: str | None = None
    offset: int | None = None


class Reporter:
    """Where the compiler says what it found: `report.error(code, message, at, hint)`
    and `report.warning(...)`; a subclass decides what `add` does with a finding."""

    __slots__ = ()

    def add(self, finding: Finding) -> None:
        raise NotImplementedError

    def error(
        self, code: str, message: str, at: str, hint: str | None = None, offset: int | None = None
    ) -> None:
        self.add(Finding(code, "error", message, at, hint, offset))

    def warning(
        self, code: str, message: str, at: str, hint: str | None = None, offset: int | None = None
    ) -> None:
        self.add(Finding(code, "warning", message, at, hint, offset))

    def watch(self) -> "Watch":
        """A reporter that passes everything on to this one and remembers whether an
        error went by (a stage then knows its own output is unusable)."""
        return Watch(self)


class Findings(Reporter):
    """A reporter that keeps each finding, unlocated, in `findings`."""

    __slots__ = ("findings",)

    def __init__(self, findings: list[Finding] | None = None) -> None:
        self.findings: list[Finding] = [] if findings is None else findings

    def add(self, finding: Finding) -> None:
        self.findings.append(finding)


class Watch(Reporter):
    __slots__ = ("failed", "parent")

    def __init__(self, parent: Reporter) -> None:
        self.parent = parent
        self.failed = False

    def add(self, finding: Finding) -> None:
        self.failed = self.failed or finding.severity == "error"
        self.parent.add(finding)


class _Ignore(Reporter):
    __slots__ = ()

    def add(self, finding: Finding) -> None:
        pass


IGNORE: Reporter = _Ignore()
"""A reporter that drops everything: for a second look at a source already reported."""


def json_kind(value: Any, *, array: str = "an array") -> str:
    """What a JSON value is, as a finding names it ("a string", "null", ...); `array`
    names a list (conditions say "a list", the schema "an array")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return array if isinstance(value, list | tuple) else "an object"


class RunNotFound(HandrailError, code=-32008, title="Run not found"):
    """No run has this id (or, with per-person tokens, none of the caller's)."""


class StepNotCurrent(HandrailError, code=-32009, title="Step is not current"):
    """The submission names a step the run is not at; `data.currentStep` says where it is."""


class RunNotActive(HandrailError, code=-32010, title="Run is not active"):
    """The run is completed or abandoned; `data.status` says which."""


class BranchHeld(HandrailError, code=-32013, title="Branch is held by another agent"):
    """Another agent session holds the branch's lease; `data.leaseUntil` says when it ends."""

    def fix(self) -> str:
        return " Call workflow_claim for a branch nobody holds, or continue this one after its lease ends."
