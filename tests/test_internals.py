"""Contract tests for the private interfaces handrail relies on (handrail.internals):
an upgrade of Python or fastjsonschema that changes one fails here, naming the version."""

from __future__ import annotations

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
