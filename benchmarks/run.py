"""Run every benchmark and write a report: benchmarks/results/latest.{md,json}.

    python -m benchmarks.run            # full run (a few minutes)
    python -m benchmarks.run --quick    # small N, seconds; what the test suite smoke-tests

Figures are ratios against baselines measured in the same run: the naive
interpreter in-process, the floor server over stdio.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import stdio_bench
from benchmarks.inprocess import workloads
from benchmarks.saving import save
from benchmarks.timing import per_call_ns

RESULTS = Path(__file__).resolve().parent / "results"


def in_process(quick: bool) -> dict[str, Any]:
    budget = 0.002 if quick else 0.02
    repeats = 2 if quick else 5
    rows = []
    for w in workloads():
        ours = per_call_ns(w.handrail, budget_s=budget, repeats=repeats)
        base = per_call_ns(w.baseline, budget_s=budget, repeats=repeats) if w.baseline else None
        rows.append(
            {
                "name": w.name,
                "kind": w.kind,
                "handrail_us": ours / 1000,
                "baseline_us": base / 1000 if base else None,
                "speedup": base / ours if base else None,
            }
        )
    summary: dict[str, Any] = {}
    for kind in ("compile", "next", "validate"):
        selected = [r for r in rows if r["kind"] == kind]
        if not selected:
            continue
        summary[kind] = {
            "count": len(selected),
            "median_us": statistics.median(r["handrail_us"] for r in selected),
            "max_us": max(r["handrail_us"] for r in selected),
            "median_speedup": statistics.median(r["speedup"] for r in selected if r["speedup"]),
        }
    compile_rows = [r for r in rows if r["kind"] == "compile" and not r["name"].startswith("compile bundled")]
    summary["compile"]["corpus_total_ms"] = sum(r["handrail_us"] for r in compile_rows) / 1000
    return {"summary": summary, "rows": rows}


def report(results: dict[str, Any]) -> str:
    s = results["in_process"]["summary"]
    e = results["stdio"]
    h, f, r = e["handrail"], e["floor"], e["replay"]
    lines = [
        f"# handrail benchmarks ({results['mode']}, {results['date']})",
        "",
        f"Machine: {results['machine']}. Command: `{results['command']}`.",
        "",
        "## In process (per call; baseline = naive interpreter of the raw JSON, same process)",
        "",
        "| what | cases | median | worst | median speed-up vs baseline |",
        "|---|---|---|---|---|",
    ]
    for kind in ("next", "validate", "compile"):
        if kind in s:
            k = s[kind]
            lines.append(
                f"| {kind} | {k['count']} | {k['median_us']:.1f} µs | {k['max_us']:.1f} µs | "
                f"{k['median_speedup']:.1f}x |"
            )
    lines += [
        "",
        f"Compiling the whole corpus: {s['compile']['corpus_total_ms']:.1f} ms "
        "(the compile baseline is json.loads alone).",
        "",
        "## Over stdio (handrail vs two floors: a Python process answering `{}`, and one",
        "replaying handrail's own answers byte for byte)",
        "",
        "| request | p50 | p99 | p50 / floor | p50 / replay | pipelined rps | rps / floor | rps / replay "
        "| server CPU per request | CPU / replay |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for tool, t in h["tools"].items():
        ft, rt = f["tools"][tool], r["tools"][tool]
        lines.append(
            f"| {tool} | {t['p50_us']:.0f} µs | {t['p99_us']:.0f} µs | "
            f"{t['p50_us'] / ft['p50_us']:.2f}x | {t['p50_us'] / rt['p50_us']:.2f}x | "
            f"{t['pipelined_rps']:.0f} | {t['pipelined_rps'] / ft['pipelined_rps']:.2f}x | "
            f"{t['pipelined_rps'] / rt['pipelined_rps']:.2f}x | {t['cpu_us']:.0f} µs | "
            f"{t['cpu_us'] / max(rt['cpu_us'], 1e-9):.2f}x |"
        )
    lines += [
        "",
        f"Spawn to initialize response: handrail {h['spawn_to_init_ms']:.0f} ms "
        f"(bundled + corpus loaded), floor {f['spawn_to_init_ms']:.0f} ms. Spawn to the first "
        f"workflow_list answer (files listed; each compiled on first use, all checked in the "
        f"background): "
        f"{h['spawn_to_first_answer_ms']:.0f} ms.",
        f"Memory (RSS, KiB): handrail {h['rss_kb']}, floor {f['rss_kb']}.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run")
    parser.add_argument("--quick", action="store_true", help="small N: a smoke test, not a measurement")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    n, spawns, soak = (20, 2, 100) if args.quick else (1000, 10, 10_000)
    results = {
        "mode": "quick" if args.quick else "full",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}",
        "command": "python -m benchmarks.run" + (" --quick" if args.quick else ""),
        "in_process": in_process(args.quick),
        "stdio": stdio_bench.run(n, spawns, soak),
    }
    save(args.out, "quick" if args.quick else "latest", results, report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
