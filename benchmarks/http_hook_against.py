"""`handrail serve`'s HTTP hooks, this tree against another commit, in one run: two
servers (this tree's `src`, and the commit's, exported with `git archive`) on the same
run store, each asked in turn on its own kept-alive connection (http.client): the
pre-tool-use of an allowed Read and of a denied Edit, and the post-tool-use of a Bash
call that changed nothing (each server's stat fingerprint of the one baseline). Other
work on the machine slows both alike, so the ratio of the medians is the figure to read.

    python -m benchmarks.http_hook_against --against 50102a3 [--rounds 300]

The denied and post-tool-use rows write a `gate` event each, to the one run both
servers judge.
"""

from __future__ import annotations

import argparse
import http.client
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADERS = {"Content-Type": "application/json"}


def exported(commit: str, folder: Path) -> Path:
    """The commit's `src`, written under `folder`: the repository's worktrees untouched."""
    archive = subprocess.run(["git", "archive", commit, "src"], cwd=ROOT, check=True, capture_output=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
    return folder / "src"


def program(src: Path) -> list[str]:
    """`handrail` run from `src`, whatever the installed package points at."""
    start = f"import sys; sys.path.insert(0, {str(src)!r}); from handrail.entry import main; sys.exit(main())"
    return [sys.executable, "-c", start]


def asked(connection: http.client.HTTPConnection, body: bytes) -> float:
    start = time.perf_counter()
    connection.request("POST", "/hooks/claude-code", body, HEADERS)
    answer = connection.getresponse()
    text = answer.read()
    spent = time.perf_counter() - start
    assert answer.status == 200, text
    return spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="COMMIT", required=True)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from benchmarks.gate_bench import repository
    from tests.gate.runs import GateWorld, claude_input
    from tests.helpers.http import HttpServer

    folder = Path(tempfile.mkdtemp(prefix="http-hook-against-"))
    try:
        trees = {"this tree": ROOT / "src", args.against: exported(args.against, folder / "base")}
        world = GateWorld(folder / "world")
        world.start("plan")
        read = {"file_path": str(world.workspace / "src" / "cart.py")}
        repository(world.workspace, world.env())
        shell = {"command": "ls"}
        bodies = {
            "pre-tool-use, allowed": claude_input(world, "PreToolUse", tool_name="Read", tool_input=read),
            "pre-tool-use, denied": claude_input(world, "PreToolUse", tool_name="Edit", tool_input=read),
            "post-tool-use, no change": claude_input(
                world, "PostToolUse", tool_name="Bash", tool_input=shell, tool_response={}
            ),
        }
        serve = ("--no-bundled", "--workflows", str(world.workflows), "--database", world.url)
        env = {"HANDRAIL_HOME": str(world.handrail_home)}
        servers = [HttpServer(*serve, env=env, program=program(src)) for src in trees.values()]
        try:
            alive = [http.client.HTTPConnection("127.0.0.1", server.port) for server in servers]
            for kind, body in bodies.items():
                times: list[list[float]] = [[], []]
                for _ in range(20):  # warm: each store opened, each policy compiled
                    for connection in alive:
                        asked(connection, body.encode())
                for n in range(args.rounds):
                    order = (0, 1) if n % 2 == 0 else (1, 0)
                    for i in order:
                        times[i].append(asked(alive[i], body.encode()))
                this, other = (statistics.median(each) * 1000 for each in times)
                print(
                    f"{kind:<25} this tree {this:5.2f} ms   {args.against} {other:5.2f} ms"
                    f"   ratio {this / other:.2f}"
                )
        finally:
            for server in servers:
                server.close()
            world.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"load average {[round(x, 2) for x in os.getloadavg()]} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
