"""What `next_step` and `validate_output` return: frozen, slotted result types.

These are the library's contract. They hold Python values (tuples, not lists) and
know nothing of JSON: `handrail.engine.result_json` turns them into the tools' wire shapes,
once, where the service answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from types import FunctionType
from typing import Any, Literal, NamedTuple, TypeVar

from handrail.model.codec import Encoded

LoopNeed = Literal["number", "list"]
T = TypeVar("T")


def _quick_init(cls: type[T]) -> type[T]:
    """Give a frozen, slotted dataclass an `__init__` that fills its slots through their
    descriptors: the generated one goes through `object.__setattr__` per field, 2 µs for
    a ten-field StepView, a sixth of a workflow_next call (benchmarks). Instances stay
    frozen: assigning an attribute afterwards still raises FrozenInstanceError."""
    names, params = [], []
    namespace: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]  # a dataclass: the decorator below runs first
        names.append(f.name)
        if f.default is MISSING:
            params.append(f.name)
        else:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        namespace[f"_set_{f.name}"] = vars(cls)[f.name].__set__
    body = "".join(f"    _set_{n}(self, {n})\n" for n in names)
    exec(f"def __init__(self, {', '.join(params)}):\n{body}", namespace)
    made = namespace["__init__"]
    # made again from its code with the class's name in it, as tracebacks and reprs show it
    code = made.__code__.replace(co_qualname=f"{cls.__qualname__}.__init__")
    init = FunctionType(code, namespace, made.__name__, made.__defaults__)
    setattr(cls, "__init__", init)  # noqa: B010  (mypy refuses assigning a method)
    return cls


@_quick_init
@dataclass(frozen=True, slots=True)
class StepView:
    """The step to do now, its texts rendered against the context (templates filled)."""

    id: str
    title: str
    prompt: str
    agent_role: str | None  # None when the step has no agentRole
    guidance: tuple[str, ...]
    ask_for_files: bool
    require_confirmation: bool  # the step's requireConfirmation, decided for this context
    run_condition: str | None  # the condition's source text, for display
    function_references: tuple[str, ...]
    checks: tuple[str, ...]  # the checks a run makes, in words (only those that apply)


@_quick_init
@dataclass(frozen=True, slots=True)
class MissingContext:
    """A context variable the remaining steps wait on before one of them can run."""

    name: str
    wanted: tuple[Any, ...]  # the values the conditions look for (may be empty)
    kind: LoopNeed | None = None  # what a loop needs it to be: a number (`for`) or a list (`forEach`)
    loop_id: str | None = None  # the loop that needs it, when `kind` is set
    unusable: str | None = None  # why the value it has cannot drive the loop, when set


@_quick_init
@dataclass(frozen=True, slots=True)
class Guidance:
    """What the agent is told: the composed prompt and what its output must meet."""

    prompt: str
    requires_confirmation: bool
    validation_criteria: tuple[str, ...]
    model_hint: str | None = None
    missing: tuple[MissingContext, ...] = ()  # set only when no step can run yet (blocked)


@_quick_init
@dataclass(frozen=True, slots=True)
class LoopPosition:
    """A running loop and its 1-based iteration (outermost first in `NextResult.loops`)."""

    id: str
    iteration: int


@_quick_init
@dataclass(frozen=True, slots=True)
class LoopView:
    """The innermost running loop around the step, with the loop variables it sets."""

    id: str
    title: str
    iteration: int
    variables: Mapping[str, Any]  # iteration and index variables, and the forEach item


class Wire(NamedTuple):
    """A view's or a guidance's wire form: the JSON as dicts (each answer copies the top
    level) and the same JSON encoded (spliced into replies)."""

    json: dict[str, Any]
    encoded: Encoded


@dataclass(frozen=True, slots=True)
class Shown:
    """A step's view that no context changes, the guidance composed for it outside
    every loop, and their wire forms."""

    view: StepView
    view_wire: Wire | None
    later: Guidance | None  # when a step is done already (top-level steps)
    later_wire: Wire | None
    first: Guidance | None  # on a first call (only for steps that can come first)
    first_wire: Wire | None

    def wire_of(self, value: Any) -> Wire | None:
        """The wire form of `value`, when it is one of these objects."""
        if value is self.view:
            return self.view_wire
        if value is self.later:
            return self.later_wire
        if value is self.first:
            return self.first_wire
        return None


@_quick_init
@dataclass(frozen=True, slots=True)
class NextResult:
    """`next_step`'s answer. Send `completed_steps` (plus the step once done) and
    `loops` back on the next call: the engine keeps no memory between calls."""

    completed_steps: tuple[str, ...]  # loop bookkeeping applied
    loops: tuple[LoopPosition, ...]  # the running loops; pass as `state=` next time
    step: StepView | None  # None when complete, or blocked on the context
    guidance: Guidance
    is_complete: bool
    loop: LoopView | None = None
    # the step's parts the compiler made, when `step` is one of them: their wire forms
    # are spliced into the reply (engine/result_json.py), not made again
    shown: Shown | None = field(default=None, compare=False, repr=False)

    @property
    def blocked(self) -> bool:
        """No step can run until the context sets what `guidance.missing` names."""
        return self.step is None and not self.is_complete


@_quick_init
@dataclass(frozen=True, slots=True)
class Verdict:
    """`validate_output`'s answer: whether the output passes the step's rules, and if
    not, what is wrong and how to fix it."""

    valid: bool
    issues: tuple[str, ...] = ()
    suggestions: tuple[str, ...] = ()


PASSED = Verdict(True)  # every passing verdict is the same: made once
