"""--price gives the counts a harness reports without a price their cost: each count at
its own rate, the harness's own figure left as it is, and a price that is not one
refused with what to give."""

from __future__ import annotations

import pytest

from handrail.drive.usage import Price, Usage, price_of


def test_a_price_costs_fresh_input_output_and_cached_input_each_at_its_rate() -> None:
    used = Usage(input_tokens=1_000, output_tokens=200, cache_read_tokens=4_000, cache_creation_tokens=500,
                 reported=True)  # fmt: skip
    priced = Price(2.0, 10.0, 0.5).of(used)
    assert priced.cost_usd == pytest.approx((1_500 * 2 + 200 * 10 + 4_000 * 0.5) / 1e6)
    assert priced.priced and priced.as_event()["priced"] is True
    assert Price(2.0, 10.0).of(used).cost_usd == pytest.approx((5_500 * 2 + 200 * 10) / 1e6)  # cached: input


def test_the_harnesss_own_cost_and_an_unreported_process_are_left_as_they_are() -> None:
    own = Usage(input_tokens=10, cost_usd=0.25, reported=True)
    assert Price(2.0, 10.0).of(own) == own and "priced" not in own.as_event()
    silent = Usage()
    assert Price(2.0, 10.0).of(silent) == silent


def test_a_price_is_two_or_three_amounts_of_zero_or_more() -> None:
    assert price_of("1.25,10") == Price(1.25, 10.0)
    assert price_of("1.25,10,0.125") == Price(1.25, 10.0, 0.125)
    for wrong in ("", "1.25", "a,b", "1,-2", "1,2,3,4", "inf,1", "nan,1"):
        with pytest.raises(ValueError, match="IN,OUT or IN,OUT,CACHED"):
            price_of(wrong)
