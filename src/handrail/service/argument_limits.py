"""A tool's arguments admitted, or refused with the reason: over a limit (model/limits.py),
each refusal naming its limit and the value it had, before anything else looks at
them; then against the tool's input schema.

`admit_arguments` is the one way in: a function per tool that says yes quickly for
the usual call (`admission`, one predicate: service/argument_check.py) and otherwise
takes the long way, where every refusal is worded."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from handrail.model.codec import json_size, loads
from handrail.model.errors import InvalidParams
from handrail.model.limits import Limits
from handrail.service.argument_check import Accept, Bounds, quick_check, schema_error_details

Admit = Callable[[dict[str, Any]], None]  # returns, or raises InvalidParams naming the problem

# the argument of a tool that has a length limit: (argument, its type, Limits field,
# the limit's name in errors, how its length is said)
_LONGEST: dict[str, tuple[str, type[str] | type[list[Any]], str, str, str]] = {
    "workflow_validate": ("output", str, "max_output_length", "maxOutputLength", "is {n} characters long"),
    "workflow_continue": ("output", str, "max_output_length", "maxOutputLength", "is {n} characters long"),
    "workflow_next": ("completedSteps", list, "max_completed_steps", "maxCompletedSteps", "has {n} entries"),
}


def admission(limits: Limits, name: str, schema: dict[str, Any]) -> Accept | None:
    """One predicate True only for arguments that pass both `check_limits` and the
    tool's schema (service/argument_check.py), or None where it cannot be told that way."""
    if name == "workflow_validate_json":
        return None  # its workflow's shape is read from the text: the long way
    longest: dict[str, int] = {}
    if name in _LONGEST:
        argument, _, field, _, _ = _LONGEST[name]
        longest[argument] = getattr(limits, field)
    return quick_check(schema, Bounds(limits.max_depth, longest, {"context": limits.max_context_bytes}))


class Admission(NamedTuple):
    """How a tool's arguments are admitted: `quick` (None where it cannot tell) says yes
    to the usual call; where it does not, `thorough` admits or refuses with the reason."""

    quick: Accept | None
    thorough: Admit


def admit_arguments(limits: Limits, name: str, schema: dict[str, Any]) -> Admission:
    """The admission of tool `name`'s arguments under `limits` and its input `schema`:
    the quick yes (`admission`) when it can tell, else the limits, then the schema."""
    full = _FullCheck(schema)
    within = admission(limits, name, schema)
    # without the quick yes (a workflow's text), the limits come first and the schema's
    # own quick yes spares the full validator
    schema_only = quick_check(schema) if within is None else None

    def thorough(arguments: dict[str, Any]) -> None:
        check_limits(limits, name, arguments)  # the long way, where refusals are worded
        if schema_only is None or not schema_only(arguments):
            full(arguments)

    return Admission(within, thorough)


class _FullCheck:
    """The full schema validator (fastjsonschema), compiled on first use: it is slow to
    import, and the usual call never needs it. Its errors are reworded to name the
    argument."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.validate: Callable[[Any], Any] | None = None

    def __call__(self, arguments: dict[str, Any]) -> None:
        import fastjsonschema  # lazy: only a refused call's full check needs it

        if self.validate is None:
            self.validate = fastjsonschema.compile(self.schema, use_default=False)
        try:
            self.validate(arguments)
        except fastjsonschema.JsonSchemaValueException as exc:
            raise InvalidParams(data={"details": schema_error_details(exc, arguments)}) from None


def check_limits(limits: Limits, name: str, arguments: dict[str, Any]) -> None:
    """Refuse what is over a limit before anything else looks at it (see model/limits.py)."""
    if _deeper_than(arguments, limits.max_depth):
        raise _over("maxDepth", limits.max_depth, f"the arguments nest deeper than {limits.max_depth} levels")
    if name in _LONGEST:
        argument, kind, field, limit, says = _LONGEST[name]
        value, most = arguments.get(argument), getattr(limits, field)
        if isinstance(value, kind) and len(value) > most:
            length = says.format(n=len(value))
            raise _over(limit, most, f"{argument} {length}, over the limit of {most}")
    elif name == "workflow_validate_json":
        text = arguments.get("workflow")
        if isinstance(text, str) and _utf8_longer_than(text, limits.max_workflow_bytes):
            raise _over(
                "maxWorkflowBytes",
                limits.max_workflow_bytes,
                f"workflow is longer than {limits.max_workflow_bytes} bytes",
            )
        if isinstance(text, str):
            _workflow_shape(limits, text)
    context = arguments.get("context")
    if isinstance(context, dict) and context:
        size = json_size(context)
        if size > limits.max_context_bytes:
            raise _over(
                "maxContextBytes",
                limits.max_context_bytes,
                f"context is {size} bytes as JSON, over the limit of {limits.max_context_bytes}",
            )


def _workflow_shape(limits: Limits, text: str) -> None:
    """Refuse a workflow to check that nests or holds more than a server takes on;
    one that does not parse is left to the compiler, which says where."""
    try:
        document = loads(text)
    except ValueError:
        return
    depth, steps = _shape(document, limits.max_workflow_depth)
    if depth > limits.max_workflow_depth:
        raise _over(
            "maxWorkflowDepth",
            limits.max_workflow_depth,
            f"workflow nests deeper than {limits.max_workflow_depth} levels",
        )
    if steps > limits.max_workflow_steps:
        raise _over(
            "maxWorkflowSteps",
            limits.max_workflow_steps,
            f"workflow has {steps} steps and loops, over the limit of {limits.max_workflow_steps}",
        )


def _over(limit: str, value: int, details: str) -> InvalidParams:
    return InvalidParams(data={"details": details, "limit": limit, "value": value})


def refuse_non_finite(arguments: dict[str, Any]) -> None:
    """A number JSON cannot carry (`1e400` read as infinity, NaN) is refused, naming where."""
    stack: list[tuple[Any, str]] = [(arguments, "")]
    while stack:
        item, where = stack.pop()
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in pairs:
            if isinstance(child, float) and not math.isfinite(child):
                place = f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]"
                raise InvalidParams(
                    data={"details": f"{place.lstrip('.')} is a number too large to represent ({child})"}
                )
            if isinstance(child, dict | list) and child:
                stack.append((child, f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]"))


def _shape(document: Any, max_depth: int) -> tuple[int, int]:
    """(deepest nesting, up to just past `max_depth`; steps and loops) of a workflow."""
    deepest, steps = 0, 0
    stack: list[tuple[Any, int, bool]] = [(document, 1, False)]
    while stack:
        item, depth, in_steps = stack.pop()
        deepest = max(deepest, depth)
        if depth > max_depth:
            break
        if isinstance(item, dict):
            if in_steps:
                steps += 1
            for key, child in item.items():
                if isinstance(child, dict | list):
                    stack.append((child, depth + 1, key in ("steps", "body") and isinstance(child, list)))
        elif isinstance(item, list):
            stack.extend((child, depth + 1, in_steps) for child in item if isinstance(child, dict | list))
    return deepest, steps


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` nests more than `limit` levels of objects and arrays (itself one).
    Iterative, so no nesting can exhaust the stack. A number that is not finite, met on
    the way, is refused (`refuse_non_finite` says where)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            kind = type(child)
            if kind is str or kind is int or kind is bool or child is None:
                continue  # the usual leaves, told apart cheaply: this runs on every call
            if kind is float:
                if not math.isfinite(child):
                    refuse_non_finite(value)
            elif isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def _utf8_longer_than(text: str, limit: int) -> bool:
    if len(text) > limit:
        return True
    if len(text) * 4 <= limit:
        return False
    return len(text.encode("utf-8", "surrogatepass")) > limit
