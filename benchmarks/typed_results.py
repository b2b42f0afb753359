"""next/validate per call, this tree against an earlier commit, in alternation.

Issue 14 made the engine return typed results (NextResult, Verdict) and moved the
conversion to JSON into the service; this says what that costs. Figures, CPU time
per call (process time, less noisy than wall time on a shared machine), over every
input (the corpus and the bundled workflows: start, midway and inside a loop for
next; every step with rules for validate):

- `service`: `Service.call`, what an in-process client pays (arguments checked, the
  engine, the JSON, the reply's size checked);
- `handler`: the engine and its JSON (before: the engine, which built the JSON);
- `engine`: the engine alone (this tree only: typed results, no JSON).

Two worker processes, one per tree, are asked for one pass each in turn, so that a
busy machine slows both alike; the median and the best of the passes are shown.

    .venv/bin/python -m benchmarks.typed_results --baseline e49b36a --rounds 60
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REPEAT = 5  # calls per input in one pass
FIGURES = [("service", "next"), ("service", "validate"), ("handler", "next"), ("handler", "validate"),
           ("engine", "next"), ("engine", "validate")]  # fmt: skip


def inputs(corpus: Path) -> dict[str, list[dict[str, Any]]]:
    """The tool arguments every pass sends, built with this tree (JSON: both trees read them)."""
    import logging

    from benchmarks import inprocess
    from handrail.catalog import load_catalog
    from handrail.model.workflow import Step

    logging.getLogger("handrail").setLevel(logging.CRITICAL)  # the corpus's broken files: known
    snapshot = load_catalog(corpus).snapshot()
    out: dict[str, list[dict[str, Any]]] = {"next": [], "validate": []}
    for entry in snapshot.entries.values():
        workflow = entry.workflow
        points: list[Any] = [([], {}, None), (*inprocess._midway(workflow), None)]
        inside = inprocess._in_loop(workflow)
        if inside is not None:
            points.append(inside)
        for completed, context, state in points:
            args = {"workflowId": workflow.id, "completedSteps": completed, "context": context}
            out["next"].append(args if state is None else {**args, "state": state})
        for node in workflow.nodes.values():
            if isinstance(node, Step) and node.rules:
                out["validate"].append(
                    {
                        "workflowId": workflow.id,
                        "stepId": node.id,
                        "output": inprocess.SAMPLE_OUTPUT,
                        "context": {},
                    }
                )
    return out


def worker(corpus: str, inputs_file: str) -> None:
    """Answer `figure kind` lines with the CPU seconds per call of one pass."""
    import gc
    import time

    from handrail.catalog import load_catalog
    from handrail.engine import next_step, validate_output
    from handrail.service.core import Service

    catalog = load_catalog(corpus)
    service = Service(catalog)
    snapshot = catalog.snapshot()
    sent = json.loads(Path(inputs_file).read_text())
    calls: dict[tuple[str, str], Any] = {
        ("service", "next"): lambda w, a: service.call("workflow_next", a),
        ("service", "validate"): lambda w, a: service.call("workflow_validate", a),
        ("engine", "next"): lambda w, a: next_step(
            w, a["completedSteps"], a["context"], state=a.get("state")
        ),
        ("engine", "validate"): lambda w, a: validate_output(w, a["stepId"], a["output"], a["context"]),
    }
    try:
        from handrail.engine.result_json import next_json, verdict_json

        engine_next, engine_validate = calls["engine", "next"], calls["engine", "validate"]
        calls["handler", "next"] = lambda w, a: next_json(engine_next(w, a))
        calls["handler", "validate"] = lambda w, a: verdict_json(engine_validate(w, a))
    except ImportError:  # before typed results: the engine built the JSON itself
        calls["handler", "next"], calls["handler", "validate"] = (
            calls.pop(("engine", "next")),
            calls.pop(("engine", "validate")),
        )
    work = {kind: [(snapshot.get(a["workflowId"]), a) for a in sent[kind]] for kind in sent}
    for (_, kind), call in calls.items():
        for w, a in work[kind]:
            call(w, a)  # warm: caches filled as a running server's are
    gc.disable()
    for line in sys.stdin:
        figure, kind = line.split()
        call = calls.get((figure, kind))
        if call is None:
            print("-", flush=True)
            continue
        start = time.process_time()
        for w, a in work[kind]:
            for _ in range(REPEAT):
                call(w, a)
        print((time.process_time() - start) / REPEAT / len(work[kind]), flush=True)
        gc.collect()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", metavar="COMMIT", default="e49b36a")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--worker", nargs=2, metavar=("CORPUS", "INPUTS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return 0
    from benchmarks.inprocess import CORPUS
    from benchmarks.many_files import baseline_source

    corpus = Path(os.environ.get("HANDRAIL_WORKRAIL_CORPUS") or CORPUS)
    work = Path(tempfile.mkdtemp(prefix="handrail-typed-"))
    try:
        (work / "inputs.json").write_text(json.dumps(inputs(corpus)))
        (work / "baseline").mkdir()
        trees = {
            f"before ({args.baseline})": baseline_source(args.baseline, work / "baseline"),
            "after": ROOT / "src",
        }
        home = work / "home"  # no ~/.handrail of the user's is read or written
        home.mkdir()
        workers = {
            name: subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.typed_results",
                    "--worker",
                    str(corpus),
                    str(work / "inputs.json"),
                ],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": f"{source}{os.pathsep}{ROOT}", "HOME": str(home)},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            for name, source in trees.items()
        }
        results: dict[str, dict[str, dict[str, float]]] = {}
        for figure, kind in FIGURES:
            passes: dict[str, list[float]] = {name: [] for name in workers}
            for _ in range(args.rounds):
                for name, process in workers.items():
                    assert process.stdin is not None and process.stdout is not None
                    process.stdin.write(f"{figure} {kind}\n")
                    process.stdin.flush()
                    answer = process.stdout.readline().strip()
                    if answer not in ("-", ""):
                        passes[name].append(float(answer))
            row = {
                name: {"median_us": statistics.median(xs) * 1e6, "best_us": min(xs) * 1e6}
                for name, xs in passes.items()
                if xs
            }
            results[f"{figure} {kind}"] = row
            shown = "  ".join(
                f"{n}: median {r['median_us']:.2f} µs, best {r['best_us']:.2f} µs" for n, r in row.items()
            )
            print(f"{figure:8} {kind:8}  {shown}", flush=True)
        for process in workers.values():
            assert process.stdin is not None
            process.stdin.close()
            process.wait(30)
        print(json.dumps(results, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
