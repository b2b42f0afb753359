"""The condition tree that both the JSON form and the text form parse into.

One tree, one compiler: the two forms cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

COMPARISONS = (
    "equals",
    "not_equals",
    "gt",
    "gte",
    "lt",
    "lte",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "in",
)
NUMERIC = frozenset({"gt", "gte", "lt", "lte"})

TEXT_OPERATORS = {
    "==": "equals",
    "!=": "not_equals",
    ">": "gt",
    ">=": "gte",
    "<": "lt",
    "<=": "lte",
    "contains": "contains",
    "startsWith": "startsWith",
    "endsWith": "endsWith",
    "matches": "matches",
    "in": "in",
}
OPERATOR_TEXT = {v: k for k, v in TEXT_OPERATORS.items()}


@dataclass(frozen=True, slots=True)
class Compare:
    var: str
    op: str
    value: Any  # JSON value; lists are tuples so the tree stays hashable
    at: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class Truthy:
    var: str
    at: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class All:
    items: tuple[Expr, ...]
    at: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class Any_:
    items: tuple[Expr, ...]
    at: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class Not:
    item: Expr
    at: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class Const:
    value: bool
    at: str = field(default="", compare=False)


Expr = Compare | Truthy | All | Any_ | Not | Const  # a condition tree (a node of it)


class FrozenDict(dict[str, Any]):
    """An object literal in a condition: compares (and serialises) as the object it is,
    hashes like a tuple so the tree stays hashable. Its values are frozen too."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items())))


def freeze(value: Any) -> Any:
    """JSON value -> hashable, immutable equivalent (lists become tuples, objects FrozenDicts)."""
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        # not a tuple of pairs: that would equal the list [[key, value], ...] and not the object
        return FrozenDict((k, freeze(v)) for k, v in value.items())
    return value


def literal_text(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, tuple):
        return "[" + ", ".join(literal_text(v) for v in value) + "]"
    if isinstance(value, dict):  # shown for people; the text form has no object literals
        return "{" + ", ".join(f"{literal_text(k)}: {literal_text(v)}" for k, v in value.items()) + "}"
    return repr(value)


def to_text(node: Expr, parent: str = "") -> str:
    """The text form of a tree: how conditions are shown to people and models."""
    match node:
        case Compare(var=var, op=op, value=value):
            return f"{var} {OPERATOR_TEXT[op]} {literal_text(value)}"
        case Truthy(var=var):
            return var
        case Const(value=value):
            return "true" if value else "false"
        case Not(item=item):
            return f"not {to_text(item, 'not')}"
        case All(items=items):
            word = "and"
        case Any_(items=items):
            word = "or"
    if not items:  # an empty `and` holds, an empty `or` does not
        return "true" if word == "and" else "false"
    text = f" {word} ".join(to_text(i, word) for i in items)
    if (parent in ("and", "not") and word == "or") or parent == "not":
        return f"({text})"
    return text


def variables(node: Expr) -> list[str]:
    """Every variable path the tree reads, in order of first use."""
    out: dict[str, None] = {}  # ordered, and linear in the size of the tree

    def visit(n: Expr) -> None:
        match n:
            case Compare(var=var) | Truthy(var=var):
                out.setdefault(var)
            case All(items=items) | Any_(items=items):
                for i in items:
                    visit(i)
            case Not(item=item):
                visit(item)

    visit(node)
    return list(out)


def literals_for(node: Expr, var: str) -> list[Any]:
    """The literal values the tree compares `var` against (for 'set X to one of ...')."""
    return literals_by_variable(node).get(var, [])


def literals_by_variable(node: Expr) -> dict[str, list[Any]]:
    """`literals_for` of every variable, in one walk of the tree (one walk per variable
    was quadratic in a long `or`). Values are kept once by `==`, as a list would."""
    out: dict[str, _Distinct] = {}

    def visit(n: Expr) -> None:
        match n:
            case Compare(var=var, op=op, value=value):
                values = value if op == "in" and isinstance(value, tuple) else (value,)
                found = out.setdefault(var, _Distinct())
                for v in values:
                    found.add(v)
            case Truthy(var=var):
                out.setdefault(var, _Distinct()).add(True)
            case All(items=items) | Any_(items=items):
                for i in items:
                    visit(i)
            case Not(item=item):
                visit(item)

    visit(node)
    return {name: found.items for name, found in out.items()}


class _Distinct:
    """Values in order of first appearance, each once by `==` (1, 1.0 and True are one),
    through a set of frozen forms, whose equality and hashes agree with `==`."""

    __slots__ = ("items", "seen")

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.seen: set[Any] = set()

    def add(self, value: Any) -> None:
        key = _frozen(value)
        if key not in self.seen:
            self.seen.add(key)
            self.items.append(value)


def _frozen(value: Any) -> Any:
    if isinstance(value, dict):
        return frozenset((k, _frozen(v)) for k, v in value.items())
    if isinstance(value, tuple | list):
        return tuple(_frozen(v) for v in value)
    return value
