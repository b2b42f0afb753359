"""Spawn to an answered `initialize` over stdio: this tree against another commit and
against the same-payload floor, in one session.

Each pair spawns the two servers one after the other, in alternating order, and times
each from `Popen` to the line answering `initialize`; the figure is the median of the
pairs' ratios, so that the load of the machine, which moves both of a pair alike,
cancels out. The floor is benchmarks/replay_server.py answering `initialize` with the
very bytes handrail answered (recorded first): a Python stdio server that reads, parses
and writes as much, and loads nothing else.

    python -m benchmarks.stdio_start_up --against a1a3104 --pairs 15
    python -m benchmarks.stdio_start_up --against a1a3104 --instructions

`--instructions` counts instead (valgrind's cachegrind), from the interpreter's start to
the first answer, a figure the load of the machine cannot move: handrail's process ends
as soon as that answer is out (`python -c`, not `-m handrail`: runpy's import is left out).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.stdio_bench import INIT, ROOT, _env, checked_out, handrail_command, replay_command

INIT_LINE = json.dumps(INIT).encode() + b"\n"


def spawn_to_initialize_ms(command: list[str]) -> tuple[float, bytes]:
    """One spawn: milliseconds from `Popen` to the answer of `initialize`, and that answer."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(),
        cwd=ROOT,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(INIT_LINE)
    process.stdin.flush()
    answer = process.stdout.readline()
    took = (time.perf_counter() - start) * 1000
    process.kill()  # what it does after its first answer (compiling the workflows) is not timed
    process.communicate()
    assert json.loads(answer).get("id") == 0, answer[:200]
    return took, answer


def record_initialize(command: list[str], path: Path) -> None:
    """handrail's answer to `initialize`, as replay_server.py reads its answers."""
    _, answer = spawn_to_initialize_ms(command)
    head, _, tail = answer.partition(b'"id":0')
    key = INIT_LINE.replace(b'"id": 0', b"", 1)
    path.write_text(json.dumps([[key.decode(), (head + b'"id":').decode(), tail.decode()]]), "utf-8")


def pairs(first: list[str], second: list[str], count: int) -> list[tuple[float, float]]:
    """`count` pairs of (first's time, second's time), the order swapped every other pair."""
    for command in (first, second):  # once each, unmeasured: bytecode written, files cached
        spawn_to_initialize_ms(command)
    found = []
    for i in range(count):
        if i % 2:
            b, a = spawn_to_initialize_ms(second)[0], spawn_to_initialize_ms(first)[0]
        else:
            a, b = spawn_to_initialize_ms(first)[0], spawn_to_initialize_ms(second)[0]
        found.append((a, b))
    return found


def summary(label: str, measured: list[tuple[float, float]]) -> str:
    ratio = statistics.median(a / b for a, b in measured)
    this = statistics.median(a for a, _ in measured)
    other = statistics.median(b for _, b in measured)
    return f"| {label} | {ratio:.2f}x | {this:.0f} ms | {other:.0f} ms |"


# handrail's command line, ended with os._exit as soon as its first answer is written
FIRST_ANSWER_ONLY = """
import os, sys
sys.argv = ["handrail", "start", *sys.argv[1:]]
def first_only(*args, **options):
    sys.stdout.flush()
    os._exit(0)
import handrail.cli.serve as command
if hasattr(command, "_after_first_answer"):  # this tree: what start does after its first answer
    command._after_first_answer = first_only
else:  # an older tree: the first answer told by stdio's serve
    try:
        import handrail.transport.stdio as stdio
    except ImportError:  # a1a3104: stdio at the top, no entry module
        import handrail.stdio as stdio
    serving = stdio.serve
    def told(*args, after_first_reply=None, **options):
        return serving(*args, after_first_reply=first_only, **options)
    stdio.serve = told
try:
    from handrail.entry import main
except ImportError:
    from handrail.cli import main
main()
"""


def instructions(command: list[str], pythonpath: str | None = None) -> int:
    """Instructions valgrind counts from `command`'s start to its end (its first answer)."""
    env = _env() | ({"PYTHONPATH": pythonpath} if pythonpath else {})
    done = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={os.devnull}", *command],
        input=INIT_LINE,
        capture_output=True,
        env=env,
        cwd=ROOT,
        check=True,
    )
    refs = [line for line in done.stderr.decode().splitlines() if "I" in line and "refs:" in line]
    return int(refs[-1].rsplit(":", 1)[1].replace(",", "").strip())


def count_instructions(commit: str, *, bundled_only: bool = False) -> str:
    """The lower of two counts for this tree, `commit` and the same-payload floor."""
    workflows = [] if bundled_only else handrail_command()[4:]
    probe = [sys.executable, "-c", FIRST_ANSWER_ONLY, *workflows]
    with checked_out(commit) as base:
        answers = base.parent / "initialize.json"
        record_initialize(handrail_command()[:4] + workflows, answers)
        instructions(probe, str(base / "src"))  # once, uncounted: its bytecode written
        this = min(instructions(probe) for _ in "ab")
        other = min(instructions(probe, str(base / "src")) for _ in "ab")
        floor = min(instructions(replay_command(answers)) for _ in "ab")
    served = "the bundled workflows" if bundled_only else "the bundled workflows and the corpus"
    return "\n".join(
        [
            f"instructions from the interpreter's start to the answer of `initialize` ({served}), "
            "valgrind, the lower of two runs",
            "",
            "| this tree against | ratio | this tree | the other |",
            "|---|---|---|---|",
            *(
                f"| {label} | {this / that:.2f}x | {this / 1e6:.0f} M | {that / 1e6:.0f} M |"
                for label, that in ((commit, other), ("the same-payload floor (replay_server.py)", floor))
            ),
        ]
    )


def compare(commit: str, count: int, *, bundled_only: bool = False) -> str:
    """`bundled_only`: serve the bundled workflows alone, not the corpus too (whose broken
    files are compiled before the first answer, to say whether they are workflows)."""
    this = [*handrail_command()[:4]] if bundled_only else handrail_command()
    with checked_out(commit) as base:
        answers = base.parent / "initialize.json"
        record_initialize(this, answers)
        against = ["env", f"PYTHONPATH={base / 'src'}", *this]
        versus_base = pairs(this, against, count)
        versus_floor = pairs(this, replay_command(answers), count)
    served = "the bundled workflows" if bundled_only else "the bundled workflows and the corpus"
    return "\n".join(
        [
            f"spawn to an answered `initialize` over stdio ({served}), {count} alternated pairs each, "
            "the median of the pairs' ratios (and each side's median)",
            "",
            "| this tree against | ratio | this tree | the other |",
            "|---|---|---|---|",
            summary(commit, versus_base),
            summary("the same-payload floor (replay_server.py)", versus_floor),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.stdio_start_up", description=__doc__)
    parser.add_argument("--against", metavar="COMMIT", required=True, help="the baseline commit")
    parser.add_argument("--pairs", type=int, default=15, help="alternated pairs per comparison (default 15)")
    parser.add_argument(
        "--bundled-only", action="store_true", help="the bundled workflows only, not the corpus"
    )
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions (valgrind) instead of timing"
    )
    args = parser.parse_args(argv)
    if args.instructions:
        print(count_instructions(args.against, bundled_only=args.bundled_only))
        return 0
    print(compare(args.against, args.pairs, bundled_only=args.bundled_only))
    return 0


if __name__ == "__main__":
    sys.exit(main())
