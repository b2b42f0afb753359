"""Contract tests for the private interfaces handrail relies on (handrail.internals):
an upgrade of Python or fastjsonschema that changes one fails here, naming the version."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import fastjsonschema
import pytest

from handrail import internals
from handrail.patterns import harden

# the patterns package, whose modules read the parse tree the adapter hands out
PATTERNS_SOURCE = "\n".join(
    path.read_text(encoding="utf-8")
    for path in sorted(Path(internals.__file__).with_name("patterns").glob("*.py"))
)


def test_the_private_interfaces_are_as_handrail_was_written_against() -> None:
    assert internals.check() == []


def test_every_regex_opcode_the_patterns_package_reads_is_checked() -> None:
    used = set(re.findall(r"\b_C\.([A-Z_]+)", PATTERNS_SOURCE))
    assert used, "handrail.patterns reads no opcode: the adapter's names are stale"
    assert used <= set(internals.SRE_NAMES), sorted(used - set(internals.SRE_NAMES))


def test_only_the_adapter_imports_pythons_private_regex_modules() -> None:
    assert "re._parser" not in PATTERNS_SOURCE and "re._constants" not in PATTERNS_SOURCE


def test_a_changed_fastjsonschema_is_named_in_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def plain(value: object) -> object:  # a validator without fastjsonschema's globals
        return value

    with pytest.raises(internals.InternalsChanged, match=r"fastjsonschema \d+\.\d+"):
        internals.validator_globals(plain)


def test_a_schema_validators_patterns_are_swapped_for_the_linear_time_engines() -> None:
    compiled = fastjsonschema.compile({"type": "string", "format": "date", "pattern": "^a+-"})
    patterns = internals.regex_patterns(internals.validator_globals(compiled))
    assert all(isinstance(p, re.Pattern) for p in patterns.values())  # what fastjsonschema leaves
    assert harden(patterns) == []
    assert not any(isinstance(p, re.Pattern) for p in patterns.values())
    with pytest.raises(fastjsonschema.JsonSchemaValueException):
        compiled("aab")
    with pytest.raises(fastjsonschema.JsonSchemaValueException):
        compiled("aa-")  # not a date: the format's anchored .match


# Names with one leading underscore that are public all the same: os._exit, and the
# methods and fields of a NamedTuple.
PUBLIC_UNDERSCORED = {"_exit", "_replace", "_asdict", "_fields", "_make"}


def private_reads(source: str) -> list[tuple[int, str]]:
    """Where a module reads another's private interface: an import of a `_` name (from
    any module) or of a `_` module of another package, and an attribute `x._name` on
    anything but `self` or `cls` that the module itself never assigns."""
    tree = ast.parse(source)
    own = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
    }
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            base = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            for alias in node.names:
                path = f"{base}.{alias.name}" if base else alias.name
                outside = path.split(".")[0] != "handrail"
                if any(
                    part.startswith("_") and not part.startswith("__")
                    for part in path.split(".")[1 if outside else -1 :]
                ):
                    found.append((node.lineno, path))
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            reader = node.value.id if isinstance(node.value, ast.Name) else ""
            if reader not in ("self", "cls") and node.attr not in own | PUBLIC_UNDERSCORED:
                found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def test_no_module_but_the_adapter_reads_a_private_interface() -> None:
    source = Path(internals.__file__).parent
    found = [
        f"{path.relative_to(source)}:{line}: {text}"
        for path in sorted(source.rglob("*.py"))
        if path.name != "internals.py" and "_generated" not in path.parts
        for line, text in private_reads(path.read_text("utf-8"))
    ]
    assert found == [], "private interfaces read outside handrail/internals.py:\n" + "\n".join(found)


def test_a_private_import_and_a_private_attribute_are_found_and_public_ones_are_not() -> None:
    source = (
        "import argparse, os\n"
        "from watchfiles._rust_notify import RustNotify\n"
        "from handrail.cli.options import _missing\n"
        "from handrail._resources import resource_path\n"
        "if isinstance(a, argparse._SubParsersAction): os._exit(1)\n"
        "self._own = p._actions\n"
    )
    assert private_reads(source) == [
        (2, "watchfiles._rust_notify.RustNotify"),
        (3, "handrail.cli.options._missing"),
        (5, "argparse._SubParsersAction"),
        (6, "p._actions"),
    ]
