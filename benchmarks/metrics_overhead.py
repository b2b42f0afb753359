"""What `handrail serve --metrics` costs a request, in-process: the protocol's one path
(`Protocol.handle`) timed per request for the stdio benchmark's scenarios, with metrics
off and on, in this tree; and with `--against COMMIT`, off in that commit too (checked
out in a temporary worktree), so that "off costs nothing" is a measured figure.

    python -m benchmarks.metrics_overhead                    # off / on, this tree
    python -m benchmarks.metrics_overhead --against HEAD~1   # and off in HEAD~1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.stdio_bench import CORPUS, ROOT, requests
from benchmarks.timing import per_call_ns

SCENARIOS = ("list", "next-midway", "validate", "call-next-midway", "call-validate")


def measure(mode: str, rounds: int) -> dict[str, float]:
    """µs per request for each scenario, the best of `rounds` (the least disturbed)."""
    from handrail.catalog import load_catalog
    from handrail.protocol.core import Protocol
    from handrail.service.core import Service

    service = Service(load_catalog(str(CORPUS)))
    if mode == "on":
        from handrail.transport.metrics import Metrics

        protocol = Protocol(service, stateless=True, observer=Metrics(lambda: service))
    else:
        protocol = Protocol(service, stateless=True)
    figures: dict[str, float] = {}
    for name in SCENARIOS:
        line = json.dumps({"jsonrpc": "2.0", "id": 1, **requests()[name]}).encode()
        assert b'"error"' not in (protocol.handle(line) or b"")[:200], name
        figures[name] = (
            min(per_call_ns(partial(protocol.handle, line), repeats=5) for _ in range(rounds)) / 1000
        )
    return figures


def _in(tree: Path | None, mode: str, rounds: int) -> dict[str, float]:
    """`measure` in a fresh interpreter, on `tree`'s source (None: this one's)."""
    path = f"{(tree or ROOT) / 'src'}{os.pathsep}{ROOT}"
    code = (
        "import json; from benchmarks.metrics_overhead import measure; "
        f"print(json.dumps(measure({mode!r}, {rounds})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": path},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.metrics_overhead")
    parser.add_argument("--against", metavar="COMMIT", help="also measure metrics off in this commit")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    columns: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="handrail-metrics-") as folder:
        base = Path(folder) / "base"
        if args.against:
            subprocess.run(
                ["git", "worktree", "add", "--detach", str(base), args.against],
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
        try:
            for _ in range(2):  # interleaved, so that a busy spell of the machine hits each alike
                if args.against:
                    _keep(columns, f"off {args.against}", _in(base, "off", args.rounds))
                _keep(columns, "off", _in(None, "off", args.rounds))
                _keep(columns, "on", _in(None, "on", args.rounds))
        finally:
            if args.against:
                subprocess.run(
                    ["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, capture_output=True
                )
    labels = list(columns)
    print("µs per request through Protocol.handle, in-process, best of the rounds")
    print("| scenario | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for name in SCENARIOS:
        print(f"| {name} | " + " | ".join(f"{columns[label][name]:.2f}" for label in labels) + " |")
    return 0


def _keep(columns: dict[str, dict[str, Any]], label: str, figures: dict[str, float]) -> None:
    kept = columns.setdefault(label, {})
    for name, value in figures.items():
        kept[name] = min(value, kept.get(name, value))


if __name__ == "__main__":
    sys.exit(main())
