"""Spawn to answer of `handrail gate` (a Claude Code command hook, spawned as the
harness spawns it, with a run active), against the floor of the same interpreter:
`python -c pass`, measured in the same run and interleaved in rounds, so that a busy
machine slows both alike. Reported as the ratio of the medians, wall time and,
steadier on a busy machine, the CPU time each process used, for a PreToolUse that is
allowed (no write), one that is denied (a `gate` event written), and the git
pre-commit hook. Budget: each at most `HOOK_BUDGET` times the floor (wall p50).

Then the same events as Claude Code's HTTP hooks: POSTed to a real `handrail serve`
on the same store, request to answer, on a kept-alive connection and on a new one
each time, and a PostToolUse of a Bash call that changed nothing, which runs the
after-tool check (the workspace a small git repository, compared with its baseline).
Budget: at most `HTTP_BUDGET_MS` (p50, kept-alive).

    python -m benchmarks.gate_bench [--rounds 30] [--events 5000]

`--events N` first gives the run N more events (tool calls the gate recorded at its
step), so that a hook on a long run is measured. Exits 1 when a budget is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HOOK_BUDGET = 4.0  # a command hook's p50 over `python -c pass`'s, same run
HTTP_BUDGET_MS = 3.0  # an HTTP hook's p50 on a kept-alive connection
FLOOR = "python -c pass (floor)"


def spawn(argv: list[str], stdin: bytes, cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall time from spawn to exit, and the CPU time (user and system) the process used:
    on a machine other work keeps busy the second moves less than the first."""
    used = _children_cpu()
    start = time.perf_counter()
    subprocess.run(argv, input=stdin, cwd=cwd, env=env, capture_output=True, check=False)
    return time.perf_counter() - start, _children_cpu() - used


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--events", type=int, default=0, help="events added to the run first")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.gate.runs import GateWorld, claude_input

    folder = Path(tempfile.mkdtemp(prefix="gate-bench-"))
    try:
        world = GateWorld(folder)
        world.start("plan")
        if args.events:
            lengthen(world, args.events)
        env = world.env()
        # as installed: bytecode cached (the first, warming round writes it)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        handrail = shutil.which("handrail", path=os.path.dirname(sys.executable))
        program = [handrail] if handrail else [sys.executable, "-m", "handrail"]
        read = {"file_path": str(world.workspace / "src" / "cart.py")}
        cases = {
            FLOOR: ([sys.executable, "-c", "pass"], b""),
            "pre-tool-use, allowed": (
                [*program, "gate", "pre-tool-use", "--harness", "claude-code"],
                claude_input(world, "PreToolUse", tool_name="Read", tool_input=read).encode(),
            ),
            "pre-tool-use, denied": (
                [*program, "gate", "pre-tool-use", "--harness", "claude-code"],
                claude_input(world, "PreToolUse", tool_name="Edit", tool_input=read).encode(),
            ),
            "git pre-commit, denied": ([*program, "gate", "pre-commit", "--harness", "git"], b""),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        cpu: dict[str, list[float]] = {name: [] for name in cases}
        for argv, stdin in cases.values():  # warm the page cache, write the bytecode
            spawn(argv, stdin, world.workspace, env)
        for _ in range(args.rounds):
            for name, (argv, stdin) in cases.items():
                wall, used = spawn(argv, stdin, world.workspace, env)
                times[name].append(wall)
                cpu[name].append(used)
        http = http_hooks(world, args.rounds * 10)
        world.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    floor = statistics.median(times[FLOOR])
    cpu_floor = statistics.median(cpu[FLOOR])
    report = {}
    missed: list[str] = []
    for name, samples in times.items():
        p50 = statistics.median(samples)
        p50_cpu = statistics.median(cpu[name])
        within = name == FLOOR or p50 / floor <= HOOK_BUDGET
        report[name] = {
            "p50_ms": round(p50 * 1000, 1),
            "ratio": round(p50 / floor, 2),
            "cpu_p50_ms": round(p50_cpu * 1000, 1),
            "cpu_ratio": round(p50_cpu / cpu_floor, 2),
            "within_budget": within,
        }
        if not within:
            missed.append(name)
        print(
            f"{name:<34} p50 {p50 * 1000:7.1f} ms {p50 / floor:5.2f}x the floor   "
            f"CPU {p50_cpu * 1000:6.1f} ms {p50_cpu / cpu_floor:5.2f}x"
            + ("" if name == FLOOR else f"   budget {HOOK_BUDGET:g}x: {'met' if within else 'MISSED'}")
        )
    for name, samples in http.items():
        p50 = statistics.median(samples)
        budgeted = "kept-alive" in name
        within = not budgeted or p50 * 1000 <= HTTP_BUDGET_MS
        report[name] = {"p50_ms": round(p50 * 1000, 2), "within_budget": within}
        if not within:
            missed.append(name)
        print(
            f"{name:<34} p50 {p50 * 1000:7.2f} ms"
            + (f"   budget {HTTP_BUDGET_MS:g} ms: {'met' if within else 'MISSED'}" if budgeted else "")
        )
    load = [round(x, 2) for x in os.getloadavg()]
    print(f"load average {load} on {os.cpu_count()} CPUs")
    about = {"rounds": args.rounds, "events": args.events, "python": sys.version.split()[0], "load": load}
    print(json.dumps({**about, "results": report, "missed": missed}))
    return 1 if missed else 0


def lengthen(world: Any, count: int) -> None:
    """`count` more events in the world's run: tool calls recorded at its step."""
    from handrail.model.runs import EventType, NewEvent, RunUpdate
    from handrail.store import open_store

    store = open_store(world.url)
    try:
        run = store.get(world.run_id)
        tool = NewEvent(EventType.GATE, "plan", {"event": "after-tool", "decision": "record", "tool": "Read"})
        for start in range(0, count, 1000):
            run = store.update(run, RunUpdate(), [tool] * min(1000, count - start), "gate")
    finally:
        store.close()


def repository(folder: Path, env: dict[str, str]) -> None:
    """A small repository in `folder`: 50 files in a few folders, committed."""
    for n in range(50):
        path = folder / f"src/part{n % 5}/module{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"VALUE = {n}\n" * 20)
    identity = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid"}
    identity |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "the code"]):
        subprocess.run(["git", *argv], cwd=folder, env=env | identity, check=True, capture_output=True)


def http_hooks(world: Any, rounds: int) -> dict[str, list[float]]:
    """Request to answer of POST /hooks/claude-code on a `handrail serve` of the world's store."""
    import http.client

    from tests.gate.runs import claude_input
    from tests.helpers.http import HttpServer

    read = {"file_path": str(world.workspace / "src" / "cart.py")}
    repository(world.workspace, world.env())
    bodies = {
        "http pre-tool-use, allowed": claude_input(world, "PreToolUse", tool_name="Read", tool_input=read),
        "http pre-tool-use, denied": claude_input(world, "PreToolUse", tool_name="Edit", tool_input=read),
        # a Bash call may change anything: the after-tool check compares the workspace
        "http post-tool-use, no change": claude_input(
            world, "PostToolUse", tool_name="Bash", tool_input={"command": "ls"}, tool_response={}
        ),
    }
    headers = {"Content-Type": "application/json"}
    times: dict[str, list[float]] = {}
    args = ("--no-bundled", "--workflows", str(world.workflows), "--database", world.url)
    with HttpServer(*args, env={"HANDRAIL_HOME": str(world.handrail_home)}) as server:
        # both rows through the same client, http.client: httpx (the server helper's own
        # client) spends about 0.5 ms of its own a request, which made the kept-alive rows
        # look slower than the new connections
        alive = http.client.HTTPConnection("127.0.0.1", server.port)
        for name, body in bodies.items():
            for _ in range(20):  # warm: the store opened, the policy compiled once
                alive.request("POST", "/hooks/claude-code", body, headers)
                alive.getresponse().read()
            kept = times.setdefault(name + " (kept-alive)", [])
            fresh = times.setdefault(name + " (new connection)", [])
            for _ in range(rounds):
                start = time.perf_counter()
                alive.request("POST", "/hooks/claude-code", body, headers)
                answered = alive.getresponse()
                text = answered.read()
                kept.append(time.perf_counter() - start)
                assert answered.status == 200, text
                connection = http.client.HTTPConnection("127.0.0.1", server.port)
                start = time.perf_counter()
                connection.request("POST", "/hooks/claude-code", body, headers)
                connection.getresponse().read()
                fresh.append(time.perf_counter() - start)
                connection.close()
        alive.close()
    assert (world.handrail_home / "gate").is_dir(), "the after-tool check took no baseline"
    return times


if __name__ == "__main__":
    raise SystemExit(main())
