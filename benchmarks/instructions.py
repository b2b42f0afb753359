"""Instructions per request, counted by valgrind: a figure the rest of the machine
cannot disturb (on a shared 2-vCPU VM, timings of the same build moved by 2x from run
to run). Each server answers N pipelined requests in process, through the real stdio
loop, from memory to /dev/null; the count of a run of 600 less that of a run of 100,
over 500, is what one request costs, start-up cancelled out. Threads wake on timers,
so counts still move by a few percent: take the lower of two runs.

    python -m benchmarks.instructions                      # this tree vs the replay floor
    python -m benchmarks.instructions --against fe3ed57    # and a commit (a temporary worktree)

Needs valgrind (Debian: `apt-get install valgrind`); each figure takes about 20 s.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.stdio_bench import CORPUS, INIT, ROOT, record, requests

SCENARIOS = ("validate", "next-midway", "next-start", "call-validate", "call-next-midway")
WORKFLOWS = ("coding-task-workflow-with-loops", "adaptive-development-workflow")
SMALL, LARGE = 100, 600


def lines(scenario: str, n: int) -> list[bytes]:
    """n requests of the scenario, ids 1..n, each a line without its newline."""
    template = json.dumps({"jsonrpc": "2.0", "id": 999999, **requests()[scenario]}).encode()
    return [template.replace(b"999999", str(i + 1).encode()) for i in range(n)]


def serve_handrail(scenario: str, n: int, folder: str) -> None:
    from handrail.catalog import load_catalog
    from handrail.protocol.core import Protocol
    from handrail.service.core import Service
    from handrail.transport import stdio

    stdio.WATCH_S = 1e6  # under valgrind every request looks long: keep the watcher out
    protocol = Protocol(Service(load_catalog(folder)))
    head = [json.dumps(INIT).encode(), b'{"jsonrpc":"2.0","method":"notifications/initialized"}']
    stream = b"\n".join([*head, *lines(scenario, n)]) + b"\n"
    with open(os.devnull, "wb", buffering=getattr(stdio, "OUT_BUFFER", 8192)) as sink:
        stdio.serve(protocol, io.BytesIO(stream), sink)


def serve_replay(scenario: str, n: int, answers: str) -> None:
    """What benchmarks/replay_server.py does for each line, over the same lines."""
    with open(answers, encoding="utf-8") as file:
        recorded = {key.encode(): (head.encode(), tail.encode()) for key, head, tail in json.load(file)}
    with open(os.devnull, "wb") as out:
        for line in (line + b"\n" for line in lines(scenario, n)):
            message = json.loads(line)
            rid = json.dumps(message["id"]).encode()
            found = recorded.get(line.replace(b'"id": ' + rid, b"", 1))
            if found is None:  # the floor would answer `{}`: not the figure asked for
                raise SystemExit(f"no recorded answer for {scenario}")
            out.write(found[0] + rid + found[1])
            out.flush()


def count(tree: Path, server: str, scenario: str, n: int, data: str) -> int:
    """Instructions valgrind counts for one whole run."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            f"--cachegrind-out-file={os.devnull}",
            sys.executable,
            "-m",
            "benchmarks.instructions",
            "--loop",
            server,
            scenario,
            str(n),
            data,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
    )
    refs = [line for line in done.stderr.splitlines() if "I" in line and "refs:" in line]
    return int(refs[-1].rsplit(":", 1)[1].replace(",", "").strip())


def per_request(tree: Path, server: str, scenario: str, data: str) -> int:
    runs = [
        count(tree, server, scenario, LARGE, data) - count(tree, server, scenario, SMALL, data) for _ in "ab"
    ]
    return min(runs) // (LARGE - SMALL)


def workflows_folder(into: Path) -> str:
    """The workflows the scenarios ask for, alone: valgrind runs start-up slowly."""
    into.mkdir()
    for path in CORPUS.rglob("*.json"):
        text = path.read_text("utf-8", "replace")
        if any(f'"id": "{name}"' in text or f'"id":"{name}"' in text for name in WORKFLOWS):
            shutil.copy(path, into / path.name)
    return str(into)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.instructions", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--against", metavar="COMMIT", help="also count this commit's tree")
    parser.add_argument(
        "scenarios", nargs="*", help=f"of {', '.join(requests())} (default: {' '.join(SCENARIOS)})"
    )
    parser.add_argument("--loop", nargs=4, help=argparse.SUPPRESS)  # server scenario n data: one run
    args = parser.parse_args(argv)
    if args.loop:
        server, scenario, n, data = args.loop
        (serve_handrail if server == "handrail" else serve_replay)(scenario, int(n), data)
        return 0
    unknown = sorted(set(args.scenarios) - set(requests()))
    if unknown:
        parser.error(f"unknown scenario {', '.join(unknown)}")
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="handrail-instructions-") as temp:
        folder = Path(temp)
        answers = folder / "answers.json"
        record([sys.executable, "-m", "handrail", "start", "--workflows", str(CORPUS)], answers)
        trees: dict[str, Path] = {"this": ROOT}
        if args.against:
            trees = {"base": folder / "base", **trees}
            subprocess.run(
                ["git", "worktree", "add", "--detach", str(trees["base"]), args.against],
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
        try:
            workflows = workflows_folder(folder / "workflows")
            rows: list[dict[str, Any]] = []
            for scenario in args.scenarios or SCENARIOS:
                row: dict[str, Any] = {"scenario": scenario}
                for label, tree in trees.items():
                    row[label] = per_request(tree, "handrail", scenario, workflows)
                row["replay"] = per_request(ROOT, "replay", scenario, str(answers))
                rows.append(row)
        finally:
            if args.against:
                subprocess.run(
                    ["git", "worktree", "remove", "--force", str(trees["base"])],
                    cwd=ROOT,
                    capture_output=True,
                )
    labels = [*trees, "replay"]
    base = f"; base = {args.against}" if args.against else ""
    print(f"instructions per request (valgrind), lower of two runs{base}\n")
    print("| scenario | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for row in rows:
        print(f"| {row['scenario']} | " + " | ".join(f"{row[label]:,}" for label in labels) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
