"""What hostile workflow documents cost: compile and first answer, one line each.

    python -m benchmarks.hostile_bench

Issue 12 measured, before the fixes: an `or` of 16,000 terms 106 s to compile, a 1 MB
workflow of 2,700 steps 33 s, three nested `while` loops of 1,000 iterations no answer
after 60 s. The median of a few runs is printed for each.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks import hostile
from handrail.compiler import compile_text
from handrail.engine import next_step


def _median_ms(work: Callable[[], Any], runs: int = 3) -> float:
    spent = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        spent.append((time.perf_counter() - start) * 1000)
    return statistics.median(spent)


def main() -> int:
    rows: list[tuple[str, float]] = []
    for name, document in (
        ("compile: `or` of 16,000 terms", hostile.wide_condition(16_000)),
        ("compile: text `or` of 16,000 terms", hostile.wide_condition(16_000, text=True)),
        ("compile: 2,700 steps, about 1 MB", hostile.many_steps(2_700)),
    ):
        text = json.dumps(document)
        rows.append((name, _median_ms(lambda text=text: compile_text(text).diagnostics)))
    for reads in (False, True):
        workflow = compile_text(json.dumps(hostile.nested_loops(3, reads_iteration=reads))).workflow
        assert workflow is not None
        label = "next: 3 nested while loops x 1,000" + (", bodies read the iteration" if reads else "")
        rows.append((label, _median_ms(lambda w=workflow: next_step(w, ["first"], hostile.NESTED_CONTEXT))))
    for name, ms in rows:
        print(f"{name:<58} {ms:>10.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
