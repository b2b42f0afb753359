"""Per-call timing: the best of several repeats of a loop long enough to measure."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def per_call_ns(fn: Callable[[], Any], *, budget_s: float = 0.02, repeats: int = 5) -> float:
    loops = 1
    while True:  # grow the loop until one repeat takes the budget
        start = time.perf_counter_ns()
        for _ in range(loops):
            fn()
        took = time.perf_counter_ns() - start
        if took >= budget_s * 1e9 or loops >= 1 << 20:
            break
        loops *= 2
    best = took / loops
    for _ in range(repeats - 1):
        start = time.perf_counter_ns()
        for _ in range(loops):
            fn()
        best = min(best, (time.perf_counter_ns() - start) / loops)
    return best


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]
