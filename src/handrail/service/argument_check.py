"""A quick yes for the arguments most calls send, before the full schema validator.

The tools' input schemas are flat: objects of strings with a pattern and bounds, an
array of such strings, an object taken as is. `quick_check` turns such a schema into
one predicate that answers True only for arguments the schema accepts; anything else
(False) goes to the full validator (fastjsonschema), which words the error. The full
validator costs a few microseconds per call and, for `uniqueItems`, a reference cycle
per call that the garbage collector must then find; this costs a fraction of that.

Given `Bounds` (a service's limits, see service/argument_limits.py), the same predicate also
says yes only for arguments within every limit, so the usual call is admitted by one
function; a no goes the long way, limits first, where each refusal is worded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Accept = Callable[[Any], bool]


@dataclass(frozen=True)
class Bounds:
    """What a tool's arguments may hold beyond their schema (see service/argument_limits.py)."""

    max_depth: int  # objects and arrays nested, the arguments themselves one
    longest: Mapping[str, int] = field(default_factory=dict)  # argument -> most characters or entries
    largest: Mapping[str, int] = field(default_factory=dict)  # object argument -> most bytes as JSON


# the keywords a quick check understands; a schema with any other gets none
_KNOWN = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "description",
        "pattern",
        "minLength",
        "maxLength",
        "items",
        "uniqueItems",
    }
)
# `^[...]+$`: one character class, repeated. What fullmatches the class run is what
# the validator's search accepts (it reads `$` as the end of the text).
_CLASS_RUN = re.compile(r"\^(\[[^\]\\]*\])\+\$")
_SEEN_COUNT, _SEEN_LENGTH = 1024, 128  # strings kept per pattern, and the longest kept


def quick_check(schema: Mapping[str, Any], bounds: Bounds | None = None) -> Accept | None:
    """A predicate True only for values `schema` accepts (and, given `bounds`, only for
    values within them); None when the schema uses more than this module knows (the
    full validator then decides every call)."""
    writer = _Writer(bounds)
    try:
        writer.value(schema, "value", 1)
    except _Unsupported:
        return None
    if bounds is not None and not writer.applied.issuperset(bounds.longest.keys() | bounds.largest.keys()):
        named = schema.get("properties", {})
        if any(name in named for name in bounds.longest.keys() | bounds.largest.keys()):
            return None  # an argument with a limit the predicate could not apply
    source = "def accept(value):\n" + "\n".join(writer.lines) + "\n    return True\n"
    import orjson  # here, not at import time: a quick check is first made on the first call

    namespace: dict[str, Any] = {**writer.constants, "dumps": orjson.dumps}
    # one straight-line function, written from the tools' own schemas (never from a
    # client's input): a call costs a few dict look-ups, no nested calls
    exec(compile(source, "<argument_check>", "exec"), namespace)
    accept: Accept = namespace["accept"]
    return accept


class _Unsupported(Exception):
    pass


class _Writer:
    """Python source that returns False as soon as a value breaks the schema."""

    def __init__(self, bounds: Bounds | None) -> None:
        self.lines: list[str] = []
        self.constants: dict[str, Any] = {"ABSENT": _ABSENT, "within": _within}
        self.names = 0
        self.bounds = bounds
        self.level = 0  # how deep the container being checked nests (the arguments: 1)
        self.arguments: dict[str, str] = {}  # variable -> the argument it holds
        self.applied: set[str] = set()  # the arguments whose limits are checked

    def fresh(self, stem: str) -> str:
        self.names += 1
        return f"{stem}{self.names}"

    def constant(self, value: Any) -> str:
        name = self.fresh("K")
        self.constants[name] = value
        return name

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def value(self, schema: Mapping[str, Any], var: str, depth: int) -> None:
        if not isinstance(schema, Mapping) or not _KNOWN.issuperset(schema):
            raise _Unsupported
        kind = schema.get("type")
        if kind == "string":
            self.string(schema, var, depth)
            return
        self.level += 1
        if self.bounds is not None and self.level > self.bounds.max_depth:
            raise _Unsupported  # a limit below the schema's own nesting: the long way decides
        if kind == "array":
            self.array(schema, var, depth)
        elif kind == "object":
            self.object(schema, var, depth)
        else:
            raise _Unsupported
        self.level -= 1

    def bounded(self, var: str, depth: int, free: bool) -> None:
        """The limits on one argument, after its schema's checks: its length, or, for an
        object taken as is, how deep it nests and how large it is."""
        bounds = self.bounds
        if bounds is None:
            return
        name = self.arguments.get(var)
        if free:
            levels = bounds.max_depth - self.level + 1  # objects and arrays it may hold, itself one
            largest = bounds.largest.get(name) if name is not None else None
            self.emit(depth, f"if not within({var}, {levels}, {largest}, dumps): return False")
            if largest is not None and name is not None:
                self.applied.add(name)
        elif name is not None and name in bounds.longest:
            self.emit(depth, f"if len({var}) > {bounds.longest[name]}: return False")
            self.applied.add(name)

    def string(self, schema: Mapping[str, Any], var: str, depth: int) -> None:
        if set(schema) - {"type", "description", "pattern", "minLength", "maxLength"}:
            raise _Unsupported
        shortest, longest = schema.get("minLength", 0), schema.get("maxLength")
        if type(shortest) is not int or (longest is not None and type(longest) is not int):
            raise _Unsupported
        pattern = schema.get("pattern")
        run = _CLASS_RUN.fullmatch(pattern) if isinstance(pattern, str) else None
        if pattern is not None and run is None:
            raise _Unsupported
        self.emit(depth, f"if type({var}) is not str: return False")
        if shortest > 0:
            self.emit(depth, f"if len({var}) < {shortest}: return False")
        if longest is not None:
            self.emit(depth, f"if len({var}) > {longest}: return False")
        if run is not None:
            # ids: the same few strings call after call, so those that matched are kept
            # (a set look-up costs a third of a match), within a bound on count and size
            whole = self.constant(re.compile(run.group(1) + "+").fullmatch)
            seen = self.constant(set())
            self.emit(depth, f"if {var} not in {seen}:")
            self.emit(depth + 1, f"if {whole}({var}) is None: return False")
            self.emit(depth + 1, f"if len({seen}) < {_SEEN_COUNT} and len({var}) <= {_SEEN_LENGTH}:")
            self.emit(depth + 2, f"{seen}.add({var})")
        self.bounded(var, depth, free=False)

    def array(self, schema: Mapping[str, Any], var: str, depth: int) -> None:
        if set(schema) - {"type", "description", "items", "uniqueItems"}:
            raise _Unsupported
        items = schema.get("items")
        if not isinstance(items, Mapping) or items.get("type") != "string":
            raise _Unsupported  # unique items compared as strings only
        unique = schema.get("uniqueItems", False)
        if unique is not True and unique is not False:
            raise _Unsupported
        self.emit(depth, f"if type({var}) is not list: return False")
        self.bounded(var, depth, free=False)  # a count first: no walk over too many entries
        entry = self.fresh("entry")
        self.emit(depth, f"for {entry} in {var}:")
        self.string(items, entry, depth + 1)
        if unique:
            self.emit(depth, f"if len(set({var})) != len({var}): return False")

    def object(self, schema: Mapping[str, Any], var: str, depth: int) -> None:
        if set(schema) - {"type", "description", "properties", "required", "additionalProperties"}:
            raise _Unsupported
        extra = schema.get("additionalProperties", True)
        if extra is not True and extra is not False:
            raise _Unsupported
        properties = schema.get("properties", {})
        required = schema.get("required", ())
        if not isinstance(properties, Mapping) or not all(
            isinstance(n, str) for n in (*properties, *required)
        ):
            raise _Unsupported
        self.emit(depth, f"if type({var}) is not dict: return False")
        if not properties and extra is True:
            self.bounded(var, depth, free=True)  # taken as is: only its size and nesting
        if required:
            self.emit(depth, f"if not {self.constant(frozenset(required))} <= {var}.keys(): return False")
        if not extra:
            self.emit(depth, f"if not {var}.keys() <= {self.constant(frozenset(properties))}: return False")
        for name, sub in properties.items():
            entry = self.fresh("field")
            self.emit(depth, f"{entry} = {var}.get({name!r}, ABSENT)")
            self.emit(depth, f"if {entry} is not ABSENT:")
            before = len(self.lines)
            if self.level == 1:
                self.arguments[entry] = name
            self.value(sub, entry, depth + 1)
            if len(self.lines) == before:
                self.emit(depth + 1, "pass")


_ABSENT = object()


def _within(value: Any, levels: int, largest: int | None, dumps: Callable[[Any], bytes]) -> bool:
    """Whether an object taken as is surely holds at most `levels` objects and arrays
    nested (itself one) and, given `largest`, at most that many bytes as JSON. Told
    from its JSON (`dumps` is orjson's): it cannot nest deeper than it has brackets.
    A no is not a refusal: the long way then looks (a bracket inside a string, a
    number JSON cannot carry, which orjson writes as null)."""
    try:
        data = dumps(value)
    except TypeError:  # orjson's JSONEncodeError: integers past 64 bits, lone surrogates
        return False
    if largest is not None and len(data) > largest:
        return False
    return b"null" not in data and data.count(b"{") + data.count(b"[") <= levels


def schema_error_details(exc: Any, arguments: dict[str, Any]) -> str:
    """fastjsonschema's message, rephrased to name the parameter."""
    rule = getattr(exc, "rule", None)
    definition = getattr(exc, "rule_definition", None)
    path = [str(p) for p in (exc.path or [])[1:]]
    field = ".".join(path)
    target = exc.value if isinstance(getattr(exc, "value", None), dict) else arguments
    if rule == "required" and isinstance(definition, list):
        missing = [name for name in definition if name not in target] or definition
        prefix = f"{field}." if field else ""
        return f"{prefix}{missing[0]} is required"
    if rule == "additionalProperties":
        extra = sorted(set(target) - set(getattr(exc, "definition", {}).get("properties", {})))
        where = f" in {field}" if field else ""
        return f"unknown parameter {', '.join(extra)}{where}" if extra else "unknown parameter"
    message = str(exc.message)
    if message.startswith("data."):
        return message[len("data.") :]
    if message.startswith("data"):
        return "params" + message[len("data") :]
    return message
