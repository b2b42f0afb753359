"""What a schema rule's JSON Schema can cost, found before it runs.

Two shapes of schema make checking one value cost without bound, whatever the
value's size:

* a `$ref` that comes back to where it started without looking inside the value
  (`{"$ref": "#"}`, or `allOf` through definitions back to the same one): checking
  never ends (H407, an error);
* keywords that check the same value against the same subschema more than once
  (`anyOf` of two references to the next level, at each level): the checks double
  per level, 2^depth in all (H408, an error past `MAX_CHECKS_PER_VALUE`).

Only references inside the schema (`#`, `#/...`) are followed; rules/closures.py refuses any
other. At run time the same validators are also bounded by the request's budget.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

MAX_CHECKS_PER_VALUE = 10_000  # subschemas one value may be checked against

# keywords whose subschemas check the same value as the schema holding them
_SAME_LIST = ("allOf", "anyOf", "oneOf")
_SAME_ONE = ("not", "if", "then", "else")


def hazards(schema: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(code, pointer inside the schema, message) for each shape above, at most one each."""
    try:
        return _Walker(schema).run()
    except RecursionError:
        return [("H408", "", "the schema nests too deeply to be checked safely")]


class _Walker:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.checks: dict[str, int] = {}
        self.active: set[str] = set()
        self.found: list[tuple[str, str, str]] = []

    def run(self) -> list[tuple[str, str, str]]:
        seen: set[str] = set()
        for pointer, _ in self.subschemas():
            if pointer not in seen:
                seen.add(pointer)
                self.count(pointer)
                if self.found:
                    break
        return self.found

    def subschemas(self) -> Iterator[tuple[str, Any]]:
        """Every schema object in the document, with its pointer (definitions included)."""
        stack: list[tuple[str, Any]] = [("", self.root)]
        while stack:
            pointer, node = stack.pop()
            if not isinstance(node, Mapping):
                continue
            yield pointer, node
            for key, value in node.items():
                if key in ("enum", "const", "examples", "default", "required"):
                    continue  # values, not schemas
                where = f"{pointer}/{_escape(str(key))}"
                if isinstance(value, Mapping):
                    stack.append((where, value))
                elif isinstance(value, list):
                    stack.extend((f"{where}/{i}", item) for i, item in enumerate(value))

    def count(self, pointer: str) -> int:
        """How many subschemas check a value checked against the one at `pointer`."""
        known = self.checks.get(pointer)
        if known is not None:
            return known
        if pointer in self.active:
            if not self.found:
                self.found.append(
                    (
                        "H407",
                        pointer,
                        "this schema refers back to itself without looking inside the value "
                        "(through `$ref`, `allOf`, `anyOf`, `oneOf`, `not` or `if`): checking never ends",
                    )
                )
            return 1
        node = _resolve(self.root, pointer)
        if not isinstance(node, Mapping):
            return 1
        self.active.add(pointer)
        total = 1
        for child in _same_value(node, pointer):
            total += self.count(child)
            if total > MAX_CHECKS_PER_VALUE and not self.found:
                self.found.append(
                    (
                        "H408",
                        pointer,
                        f"one value may be checked against this schema's parts more than "
                        f"{MAX_CHECKS_PER_VALUE} times: references to the same subschema "
                        "multiply at each level",
                    )
                )
            if self.found:
                break
        self.active.discard(pointer)
        self.checks[pointer] = total
        return total


def _same_value(node: Mapping[str, Any], pointer: str) -> Iterator[str]:
    """Pointers of the subschemas that check the same value as `node`."""
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = _local(ref)
        if target is not None:
            yield target
        return  # draft-07: beside `$ref` other keywords are ignored
    for key in _SAME_LIST:
        items = node.get(key)
        if isinstance(items, list):
            for i in range(len(items)):
                yield f"{pointer}/{key}/{i}"
    for key in _SAME_ONE:
        if isinstance(node.get(key), Mapping):
            yield f"{pointer}/{key}"
    dependencies = node.get("dependencies")
    if isinstance(dependencies, Mapping):
        for name, value in dependencies.items():
            if isinstance(value, Mapping):
                yield f"{pointer}/dependencies/{_escape(str(name))}"


def _local(ref: str) -> str | None:
    """`#/definitions/a` -> `/definitions/a`; None for any reference outside the schema."""
    if ref == "#":
        return ""
    if ref.startswith("#/"):
        from urllib.parse import unquote  # lazy: only a $ref with an escape needs it

        return unquote(ref[1:])
    return None


def _resolve(root: Any, pointer: str) -> Any:
    node = root
    for part in pointer.split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping):
            node = node.get(key)
        elif isinstance(node, list) and key.isdecimal() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
