"""The compiled workflow: frozen, slotted types that hold closures, never raw dicts.

Each condition and rule keeps a readable form of its source for display; the
closures inside are what `next` and `validate` call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from handrail.model.codec import loads
from handrail.model.step_policy import Policy

Context = Mapping[str, Any]
LoopKind = Literal["while", "until", "for", "forEach"]


@dataclass(frozen=True, slots=True)
class Condition:
    """A compiled condition: `holds(context)` plus what it reads, for guidance."""

    text: str  # the condition in text form, for people and models
    holds: Callable[[Context], bool]
    variables: tuple[str, ...]
    looks_for: tuple[tuple[str, tuple[Any, ...]], ...]  # variable -> literals compared with
    constant: bool | None = None  # set when the condition can never vary
    # the unset variables whose value could still change the outcome (for guidance)
    undecided: Callable[[Context], tuple[str, ...]] = lambda ctx: ()


class Output:
    """An output under validation; parsed as JSON at most once per call."""

    __slots__ = ("_json", "_parsed", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._parsed = False
        self._json: Any = None

    def json(self) -> tuple[bool, Any]:
        """(is JSON, value)."""
        if not self._parsed:
            self._parsed = True
            try:
                self._json = (True, loads(self.text))
            except ValueError:
                self._json = (False, None)
        result: tuple[bool, Any] = self._json
        return result


# A rule check returns its failures: (issue, suggestion) pairs; empty means it passed.
Check = Callable[[Output, Context], list[tuple[str, str]]]


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str  # contains | regex | length | schema | and | or | not
    description: str  # what it checks, in words
    check: Check
    condition: Condition | None = None


@dataclass(frozen=True, slots=True)
class ApprovalRule:
    """Who may approve a step that waits for a person (spec/workflow-format.md, "Approvers")."""

    approvers: tuple[str, ...] = ()  # names, and roles as `role:NAME`; empty: whoever may approve at all
    approvals: int = 1  # distinct people
    separate: bool = False  # the person who started the run may not approve
    remind_after: int | None = None  # seconds
    escalate_after: int | None = None  # seconds
    escalate_role: str | None = None
    presence: str | None = None  # "passkey": every approval needs the person's passkey


ANYONE = ApprovalRule()


@dataclass(frozen=True, slots=True)
class Step:
    id: str
    title: str
    prompt: str
    agent_role: str | None
    guidance: tuple[str, ...]
    model_hint: str | None
    ask_for_files: bool
    confirmation: bool | Condition
    run_condition: Condition | None
    rules: tuple[Rule, ...]  # every one must pass
    criteria: tuple[str, ...]  # what the rules check, in words (guidance.validationCriteria)
    function_references: tuple[str, ...]
    loop: str | None  # the loop this step is the body of, if any
    pointer: str
    checks: tuple[StepCheck, ...] = ()  # evidence the server gathers itself, in a run
    policy: Policy | None = None  # what the agent may do while the step is current (spec/gate.md)
    approval: ApprovalRule = ANYONE  # who may approve, when the step waits for a person
    subworkflow: SubWorkflow | None = None  # the workflow a run starts as a child run here


@dataclass(frozen=True, slots=True)
class SubWorkflow:
    """A step that runs another workflow as a child run: which, the child's starting
    context (string values are templates over the parent's), and where its result goes."""

    workflow_id: str
    context: Mapping[str, Any]
    results_var: str


@dataclass(frozen=True, slots=True)
class Glob:
    """A compiled path glob, relative to a workspace: `*`, `?`, `[...]` within one folder
    name, `**` for any number of folders."""

    text: str
    matches: Callable[[str], bool]  # a relative, /-separated path -> whether it matches
    base: str  # the literal folders the glob starts with ("" for the workspace itself)


@dataclass(frozen=True, slots=True)
class CommandCheck:
    """A program the server runs in the workspace, without a shell."""

    message: str
    description: str
    condition: Condition | None
    argv: tuple[str, ...]  # literal; empty when `command` names a configured command
    command: str | None  # a name from the server's own configuration
    timeout_seconds: float | None  # None: the configured default
    exit_code: int
    pointer: str

    @property
    def type(self) -> Literal["command"]:
        return "command"


@dataclass(frozen=True, slots=True)
class FileCheck:
    """A file matching `path` exists under the workspace (and one holds `contains`)."""

    message: str
    description: str
    condition: Condition | None
    path: Glob
    contains: Any  # a handrail.patterns.Regex, or None
    pointer: str

    @property
    def type(self) -> Literal["file"]:
        return "file"


@dataclass(frozen=True, slots=True)
class GitCheck:
    """The workspace's git state: changes since the run began, and/or nothing uncommitted."""

    message: str
    description: str
    condition: Condition | None
    changes: bool
    clean: bool
    paths: tuple[Glob, ...]  # empty: the whole workspace
    pointer: str

    @property
    def type(self) -> Literal["git"]:
        return "git"


StepCheck = CommandCheck | FileCheck | GitCheck
WorkflowOrigin = Literal["source", "submitted"]


@dataclass(frozen=True, slots=True)
class Loop:
    id: str
    title: str
    kind: LoopKind
    condition: Condition | None
    items: str | None
    count: int | str | None
    max_iterations: int
    iteration_var: str
    item_var: str
    index_var: str
    body: tuple[str, ...]
    confirmation: bool | Condition
    run_condition: Condition | None
    loop: str | None  # the enclosing loop, for nested loops
    pointer: str
    parallel: Parallel | None = None  # a forEach loop run as branches, in a run (spec/runs.md)


@dataclass(frozen=True, slots=True)
class Parallel:
    """How a parallel loop's branches run: how many at once, how many must complete, and
    the context variable its results go into."""

    max_parallel: int
    at_least: int | None  # None: every branch
    results_var: str


AnyStep = Step | Loop


@dataclass(frozen=True, slots=True)
class Workflow:
    id: str
    name: str
    description: str
    version: str
    category: str
    model_hint: str | None
    preconditions: tuple[str, ...]
    clarification_prompts: tuple[str, ...]
    meta_guidance: tuple[str, ...]
    sequence: tuple[str, ...]  # top-level ids in order, loop bodies left out
    nodes: Mapping[str, AnyStep]  # every step and loop by id (read-only)
    document: bytes  # the source JSON, re-parsed per workflow_get so no caller shares it
    file: str
    revision: str  # digest of the source; changes whenever the file does
    content_hash: str  # sha256 of `document`: the version a run is pinned to (runs/pinning.py)
    # "source": read from a source the user configured; "submitted": sent by a client
    # (workflow_validate_json). Only the first may run command checks.
    origin: WorkflowOrigin = "submitted"
    # what the compiler derives from the rest, once, for the engine and the wire: a
    # `handrail.engine.derived.Derived` (typed there: the model names no layer above it)
    derived: Any = field(default=None, compare=False, repr=False)

    @property
    def step_count(self) -> int:
        return len(self.nodes)

    def __post_init__(self) -> None:
        if not isinstance(self.nodes, MappingProxyType):
            object.__setattr__(self, "nodes", MappingProxyType(dict(self.nodes)))
