"""The argument benchmark compares two ways of saying yes: each of its calls is one that
both the quick predicate and the fastjsonschema validator accept, so neither figure is
the speed of a refusal (no timing is asserted)."""

from __future__ import annotations

import pytest

from benchmarks import argument_bench
from handrail.model.limits import Limits
from handrail.service.argument_limits import admission


@pytest.mark.parametrize("name", sorted(argument_bench.CALLS))
def test_each_measured_call_is_admitted_both_ways(name: str) -> None:
    arguments = argument_bench.CALLS[name]
    limits = Limits()
    quick = admission(limits, name, argument_bench.input_schema(name))
    assert quick is not None and quick(arguments)
    validate, admit = argument_bench.schema_admit(name, limits)
    validate(arguments)  # raises on a refusal
    admit(arguments)
