"""End to end over stdio: spawn a server, handshake, then N sequential requests per
tool and the same pipelined; the same client against two floors: one that answers
`{}` (the least a Python stdio server can cost), and one that replays the bytes
handrail answered to each request (the same answers, none of handrail's work).
`--against` also measures handrail less its engine (engine_free_server.py), which
tells the server's framework from the engine's work in what separates the two.

Where the machine has two CPUs or more, each phase places client and server the same
way for every server measured: sequential requests with both on one CPU, pipelined
ones on two. A client and a server that wait for each other otherwise land on one
CPU or on two as the scheduler pleases, and on a virtual machine a wake-up across
CPUs can cost more than the request (a 2-vCPU VM here: the floor's p50 moved between
24 and 83 µs from one run to the next); placed, the figures measure the servers."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.corpus_path import corpus_folder
from benchmarks.timing import percentile

ROOT = Path(__file__).resolve().parents[1]
CORPUS = corpus_folder()
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}


def handrail_command() -> list[str]:
    return [sys.executable, "-m", "handrail", "start", "--workflows", str(CORPUS)]


def floor_command() -> list[str]:
    return [sys.executable, str(ROOT / "benchmarks" / "floor_server.py")]


def engine_free_command() -> list[str]:
    """handrail, its engine's answers remembered (engine_free_server.py)."""
    return [sys.executable, str(ROOT / "benchmarks" / "engine_free_server.py"), str(CORPUS)]


def replay_command(answers: Path) -> list[str]:
    return [sys.executable, str(ROOT / "benchmarks" / "replay_server.py"), str(answers)]


def requests() -> dict[str, dict[str, Any]]:
    """One request per tool in the seed's direct form, and the ones MCP clients send
    (tools/call, whose result carries the answer twice: a text block and structuredContent)."""
    direct = _direct()
    return {
        **direct,
        **{f"call-{name}": _as_tool_call(direct[name]) for name in ("get", "next-midway", "validate")},
    }


def _as_tool_call(body: dict[str, Any]) -> dict[str, Any]:
    return {"method": "tools/call", "params": {"name": body["method"], "arguments": body["params"]}}


def _direct() -> dict[str, dict[str, Any]]:
    return {
        "list": {"method": "workflow_list", "params": {}},
        "get": {"method": "workflow_get", "params": {"id": "coding-task-workflow-with-loops"}},
        "next-start": {
            "method": "workflow_next",
            "params": {"workflowId": "coding-task-workflow-with-loops", "completedSteps": []},
        },
        "next-midway": {
            "method": "workflow_next",
            "params": {
                "workflowId": "coding-task-workflow-with-loops",
                "completedSteps": ["phase-0-intelligent-triage", "phase-0b-user-rules-identification"],
                "context": {"taskComplexity": "Medium", "automationLevel": "High"},
            },
        },
        "validate": {
            "method": "workflow_validate",
            "params": {
                "workflowId": "adaptive-development-workflow",
                "stepId": "comprehensive-testing",
                "output": "We wrote a unit test and an integration test; describe blocks cover 90% coverage.",
                "context": {"complexity": 0.9},
            },
        },
    }


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure as users run it: with cached bytecode
    return env


@dataclass
class Server:
    command: list[str]
    process: subprocess.Popen[bytes] = field(init=False)
    spawn_to_init_ms: float = field(init=False)
    spawn_to_first_answer_ms: float = field(init=False)
    next_id: int = 1

    def __post_init__(self) -> None:
        start = time.perf_counter()
        self.process = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_env(),
            cwd=ROOT,
        )
        self.send(INIT)
        reply = self.receive()
        self.spawn_to_init_ms = (time.perf_counter() - start) * 1000
        assert reply.get("id") == 0, reply
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.request({"method": "workflow_list", "params": {}})
        # what a client waits for its first real answer (workflows are listed, and
        # compiled on first use)
        self.spawn_to_first_answer_ms = (time.perf_counter() - start) * 1000
        self.settle()

    def settle(self, quiet_s: float = 0.3, at_most_s: float = 60.0) -> None:
        """Wait until the server is idle: a server checks every file in the background
        after its first answer, CPU that belongs to no request measured here."""
        until = time.monotonic() + at_most_s
        used = self.cpu_s()
        while time.monotonic() < until:
            time.sleep(quiet_s)
            now = self.cpu_s()
            if now - used < quiet_s * 0.02:  # under 2% of a core: idle
                return
            used = now

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(_line(message))
        self.process.stdin.flush()

    def exchange(self, body: dict[str, Any]) -> tuple[bytes, bytes]:
        """One request: (the line sent, the line answered), both as bytes."""
        self.next_id += 1
        line = _line({"jsonrpc": "2.0", "id": self.next_id, **body})
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line)
        self.process.stdin.flush()
        return line, self._answer()[0]

    def receive(self) -> dict[str, Any]:
        return self._answer()[1]

    def _answer(self) -> tuple[bytes, dict[str, Any]]:
        """The next line that answers a request, and what it says, past the notifications a
        client also gets (a server says list_changed once its background check is done)."""
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("server closed its output")
            message: dict[str, Any] = json.loads(line)
            if "id" in message:  # a notification has none
                return line, message

    def request(self, body: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, **body})
        return self.receive()

    def place(self, cpu: int | None) -> None:
        """Run the server's threads (and those it starts later) on `cpu` only; None: anywhere."""
        cpus = os.sched_getaffinity(0) if cpu is None else {cpu}
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{self.process.pid}/task").iterdir():
                with contextlib.suppress(OSError, ValueError):
                    os.sched_setaffinity(int(task.name), cpus)

    def cpu_s(self) -> float:
        """CPU seconds the server has used so far, from /proc: the nanosecond run time of
        each of its threads (schedstat), else user plus system time in clock ticks."""
        try:
            tasks = Path(f"/proc/{self.process.pid}/task").iterdir()
            return sum(int((task / "schedstat").read_text().split()[0]) for task in tasks) / 1e9
        except (OSError, ValueError, IndexError):
            pass
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_kb(self) -> tuple[int, int]:
        """(current RSS, peak RSS) in KiB, from /proc."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=10)
        if self.process.stdout:
            self.process.stdout.close()


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def record(command: list[str], path: Path) -> None:
    """What the server answers to each request, for the replay floor (replay_server.py)."""
    server = Server(command)
    recorded = []
    for body in [INIT, {"method": "workflow_list", "params": {}}, *requests().values()]:
        body = {k: v for k, v in body.items() if k not in ("jsonrpc", "id")}
        line, answer = server.exchange(body)
        rid = str(server.next_id).encode()
        key = line.replace(b'"id": ' + rid, b"", 1)
        head, _, tail = answer.partition(b'"id":' + rid)
        assert tail, f"no id in {answer[:200]!r}"
        recorded.append([key.decode(), (head + b'"id":').decode(), tail.decode()])
    server.close()
    path.write_text(json.dumps(recorded), "utf-8")


def sequential(server: Server, body: dict[str, Any], n: int) -> list[float]:
    latencies = []
    for _ in range(n):
        start = time.perf_counter()
        reply = server.request(body)
        latencies.append((time.perf_counter() - start) * 1e6)
        assert "result" in reply, reply
    return latencies


def pipelined(server: Server, body: dict[str, Any], n: int) -> float:
    """Requests per second with all n requests written without waiting for answers."""
    lines = []
    for _ in range(n):
        server.next_id += 1
        lines.append(_line({"jsonrpc": "2.0", "id": server.next_id, **body}))
    payload = b"".join(lines)
    assert server.process.stdin is not None
    start = time.perf_counter()
    writer = threading.Thread(
        target=lambda: (
            server.process.stdin.write(payload),  # type: ignore[union-attr]
            server.process.stdin.flush(),
        )
    )  # type: ignore[union-attr]
    writer.start()
    for _ in range(n):
        server.receive()
    took = time.perf_counter() - start
    writer.join()
    return n / took


def measure(
    command: list[str], n: int, spawns: int, soak: int, *, together: bool | None = True
) -> dict[str, Any]:
    """`together`: where sequential requests run (see `placed`); pipelined ones always
    run with client and server apart, where the machine has two CPUs."""
    spawn_times, first_answers = [], []
    for _ in range(spawns - 1):
        s = Server(command)
        spawn_times.append(s.spawn_to_init_ms)
        first_answers.append(s.spawn_to_first_answer_ms)
        s.close()
    server = Server(command)
    spawn_times.append(server.spawn_to_init_ms)
    first_answers.append(server.spawn_to_first_answer_ms)
    out: dict[str, Any] = {
        "spawn_to_init_ms": percentile(spawn_times, 50),
        "spawn_to_first_answer_ms": percentile(first_answers, 50),
        "tools": {},
    }
    for name, body in requests().items():
        placed(server, together=together)
        cpu = server.cpu_s()
        lat = sequential(server, body, n)
        cpu = server.cpu_s() - cpu
        placed(server, together=False)
        rps = pipelined(server, body, n)
        out["tools"][name] = {
            "p50_us": percentile(lat, 50),
            "p99_us": percentile(lat, 99),
            "pipelined_rps": rps,
            # the server's own CPU time per request: its work, whatever else the machine runs
            "cpu_us": cpu / n * 1e6,
        }
    placed(server, together=None)
    rss_before, _ = server.rss_kb()
    bodies = list(requests().values())
    for i in range(soak):
        server.request(bodies[i % len(bodies)])
    rss_after, peak = server.rss_kb()
    out["rss_kb"] = {"after_warmup": rss_before, f"after_{soak}_more": rss_after, "peak": peak}
    server.close()
    return out


CPUS = sorted(os.sched_getaffinity(0))
PLACES = {True: "on one CPU", False: "on two CPUs", None: "where the scheduler puts them"}


def placed(server: Server, *, together: bool | None) -> None:
    """Client (this process) and server on one CPU (`together`), on two, or anywhere
    (None, or a machine with one CPU)."""
    if len(CPUS) < 2 or together is None:
        os.sched_setaffinity(0, CPUS)
        server.place(None)
        return
    os.sched_setaffinity(0, {CPUS[0]})
    server.place(CPUS[0] if together else CPUS[1])


def run(n: int, spawns: int, soak: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="handrail-replay-") as folder:
        answers = Path(folder) / "answers.json"
        record(handrail_command(), answers)
        return {
            "handrail": measure(handrail_command(), n, spawns, soak),
            "floor": measure(floor_command(), n, spawns, soak),
            "replay": measure(replay_command(answers), n, spawns, soak),
        }


@contextlib.contextmanager
def checked_out(commit: str) -> Iterator[Path]:
    """`commit` checked out in a temporary worktree, removed after: its folder, in a
    temporary folder of its own where a comparison may keep its files."""
    with tempfile.TemporaryDirectory(prefix="handrail-compare-") as folder:
        base = Path(folder) / "base"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(base), commit],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        try:
            yield base
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, capture_output=True)


def compare(commit: str, n: int, rounds: int, *, together: bool | None = True) -> str:
    """This tree and `commit` (checked out in a temporary worktree) against the replay
    floor, in one session, each measured `rounds` times in turn: the best of the rounds
    (the least disturbed by the rest of the machine) for each figure."""
    with checked_out(commit) as base:
        answers = base.parent / "answers.json"
        record(handrail_command(), answers)
        commands = {
            "base": ["env", f"PYTHONPATH={base / 'src'}", *handrail_command()],
            "this": handrail_command(),
            "engine-free": engine_free_command(),
            "replay": replay_command(answers),
        }
        runs: dict[str, list[dict[str, Any]]] = {label: [] for label in commands}
        for _ in range(rounds):
            for label, command in commands.items():
                runs[label].append(measure(command, n, 1, 0, together=together)["tools"])
    best = {label: _best(tools) for label, tools in runs.items()}
    lines = [
        f"over stdio, {n} requests per scenario, best of {rounds} rounds; base = {commit}",
        (
            f"sequential: client and server {PLACES[together]}; pipelined: on two CPUs"
            " (see the module's docstring)"
        )
        if len(CPUS) > 1
        else "one CPU: client and server share it",
        "",
        "| scenario | server CPU µs/request base / this / engine-free / replay "
        "| p50 vs replay base / this / engine-free | pipelined rps vs replay base / this / engine-free |",
        "|---|---|---|---|",
    ]
    labels = ("base", "this", "engine-free")
    for name in requests():
        r = best["replay"][name]
        figures = [best[label][name] for label in labels]
        cpu = " / ".join(f"{f['cpu_us']:.0f}" for f in [*figures, r])
        p50 = " / ".join(f"{f['p50_us'] / r['p50_us']:.2f}x" for f in figures)
        rps = " / ".join(f"{f['pipelined_rps'] / r['pipelined_rps']:.2f}x" for f in figures)
        lines.append(f"| {name} | {cpu} | {p50} | {rps} |")
    lines += [
        "",
        "engine-free: this tree with workflow_next and workflow_validate answering what their first call",
        "answered (benchmarks/engine_free_server.py): the gap to it is the engine's own work per call.",
    ]
    return "\n".join(lines)


def _best(rounds: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    return {
        name: {
            "cpu_us": min(r[name]["cpu_us"] for r in rounds),
            "p50_us": min(r[name]["p50_us"] for r in rounds),
            "pipelined_rps": max(r[name]["pipelined_rps"] for r in rounds),
        }
        for name in rounds[0]
    }


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.stdio_bench",
        description="handrail over stdio against the replay floor, and against another commit",
    )
    parser.add_argument("--against", metavar="COMMIT", required=True, help="the baseline commit")
    parser.add_argument("-n", type=int, default=1000, help="requests per scenario")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--sequential",
        choices=["one-cpu", "two-cpus", "anywhere"],
        default="one-cpu",
        help="where client and server run for sequential requests (default: one CPU)",
    )
    args = parser.parse_args(argv)
    together = {"one-cpu": True, "two-cpus": False, "anywhere": None}[args.sequential]
    print(compare(args.against, args.n, args.rounds, together=together))
    return 0


if __name__ == "__main__":
    sys.exit(main())
