"""Regexes against adversarial text: the classic catastrophic patterns, on texts built
to make a backtracking engine explode, timed per search at 1 KB, 10 KB and 100 KB.

    python -m benchmarks.regex_adversarial            # prints a table, writes benchmarks/results/regex.json
    python -m benchmarks.regex_adversarial --quick    # 1 KB and 10 KB only

handrail runs each pattern on RE2 (linear in the text); Python's `re` is shown beside
it on a text of 28 characters, in a child process stopped after 2 s. The last rows are
patterns RE2 cannot run: they go to the `regex` module, whose searches stop at the time
limit (100 ms by default, `--regex-timeout`) and fail the call instead of answering.
The tests (tests/patterns/test_patterns.py) check the answers, not the times.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
Builder = Callable[[int], str]

# (pattern, flags, text of about n characters, found?)
CASES: list[tuple[str, str, Builder, bool]] = [
    ("(a+)+$", "", lambda n: "a" * n + "!", False),
    ("(a|aa)+$", "", lambda n: "a" * n + "!", False),
    ("(a|a)*b", "", lambda n: "a" * n, False),
    ("(.*a){12}", "", lambda n: "a" * 11 + "b" * n, False),
    ("(x+x+)+y", "", lambda n: "x" * n, False),
    (r"^(\w+\s?)*$", "", lambda n: "word " * (n // 5) + "!", False),
    (r"(\d+)*\.", "", lambda n: "1" * n + "x", False),
    (r"^(([a-z])+.)+[A-Z]([a-z])+$", "", lambda n: "a" * n + "!", False),
    (r"\b(\w+\s*)+$", "i", lambda n: "abc " * (n // 4) + "é!", False),
    (r"^(\s*,?\s*\d+)*$", "", lambda n: "1, " * (n // 3) + "x", False),
    (
        r"^([a-zA-Z0-9])(([\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$",
        "",
        lambda n: "a" * n + "!",
        False,
    ),
    (r"\b\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?\b", "", lambda n: "1.2.3-" + "a." * (n // 2), True),
]
# patterns RE2 cannot run: the backtracking engine, bounded by the time limit
BOUNDED: list[tuple[str, str, Builder]] = [
    ("(?=(a|aa)+$)", "", lambda n: "a" * n + "!"),
    (r"((a|aa)+)\2$", "", lambda n: "a" * n + "!"),
    (r"^(?!.*TODO)(\w+\s?)*$", "", lambda n: "word " * (n // 5) + "!"),
]
PYTHON_SIZE = 28
PYTHON_LIMIT_S = 2.0


def per_search_ms(search: Callable[[str], Any], text: str, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        search(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def python_re_seconds(pattern: str, flags: str, text: str) -> float | None:
    """Python's `re` on `text`, in a child process: seconds, or None past the limit."""
    code = (
        "import re, sys, time\n"
        "from handrail.patterns import flag_bits\n"
        "p = re.compile(sys.argv[1], flag_bits(sys.argv[2]))\n"
        "t = time.perf_counter(); p.search(sys.argv[3]); print(time.perf_counter() - t)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, pattern, flags, text],
            capture_output=True,
            text=True,
            timeout=PYTHON_LIMIT_S,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return None
    return float(done.stdout)


def main(argv: list[str] | None = None) -> int:
    from handrail import patterns
    from handrail.patterns import RegexTimeout, compile_pattern

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 KB and 10 KB only, no Python baseline")
    parser.add_argument("--out", type=Path, default=RESULTS / "regex.json")
    args = parser.parse_args(argv)
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    repeats = 3 if args.quick else 7
    rows: list[dict[str, Any]] = []
    wrong = 0

    print(
        f"{'pattern':<44} {'engine':<6} " + " ".join(f"{s // 1000:>5} KB" for s in sizes) + "   re, 28 chars"
    )
    for pattern, flags, build, found in CASES:
        compiled = compile_pattern(pattern, flags)
        row: dict[str, Any] = {"pattern": pattern, "flags": flags, "engine": compiled.engine, "ms": {}}
        for size in sizes:
            text = build(size)
            if (compiled.search(text) is not None) is not found:
                wrong += 1
            row["ms"][str(size)] = per_search_ms(compiled.search, text, repeats)
        if not args.quick:
            row["python_re_s"] = python_re_seconds(pattern, flags, build(PYTHON_SIZE))
        rows.append(row)
        _print(row, sizes)

    limit = patterns.timeout_ms()
    for pattern, flags, build in BOUNDED:
        compiled = compile_pattern(pattern, flags)
        row = {"pattern": pattern, "flags": flags, "engine": compiled.engine, "ms": {}, "cut_off": {}}
        for size in sizes:
            start = time.perf_counter()
            try:
                compiled.search(build(size))
                row["cut_off"][str(size)] = False
            except RegexTimeout:
                row["cut_off"][str(size)] = True
            row["ms"][str(size)] = (time.perf_counter() - start) * 1000
        rows.append(row)
        _print(row, sizes)

    linear = [r for r in rows if r["engine"] == "re2"]
    bounded = [r for r in rows if r["engine"] == "regex"]
    worst = max(max(r["ms"].values()) for r in linear)
    worst_bounded = max(max(r["ms"].values()) for r in bounded)
    print(
        f"\nworst RE2 search: {worst:.2f} ms ({max(sizes) // 1000} KB); backtracking engine: "
        f"{worst_bounded:.0f} ms with its {limit} ms limit; wrong answers: {wrong}"
    )
    report = {
        "command": "python -m benchmarks.regex_adversarial" + (" --quick" if args.quick else ""),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "sizes": sizes,
        "timeout_ms": limit,
        "worst_linear_ms": worst,
        "worst_bounded_ms": worst_bounded,
        "wrong_answers": wrong,
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if wrong == 0 else 1


def _print(row: dict[str, Any], sizes: list[int]) -> None:
    shown = row["pattern"] if len(row["pattern"]) <= 44 else row["pattern"][:41] + "..."
    cells = " ".join(f"{row['ms'][str(s)]:>8.2f}" for s in sizes)
    extra = ""
    if "python_re_s" in row:
        seconds = row["python_re_s"]
        extra = f"   {'> 2 s' if seconds is None else f'{seconds * 1000:.1f} ms'}"
    if row.get("cut_off"):
        extra = "   cut off at " + ", ".join(f"{s // 1000} KB" for s in sizes if row["cut_off"][str(s)])
        extra = extra if any(row["cut_off"].values()) else "   answered"
    print(f"{shown:<44} {row['engine']:<6} {cells}{extra}")


if __name__ == "__main__":
    raise SystemExit(main())
