"""`handrail drive`'s own cost between two agent processes: from one agent's end to the
next one's start (its usage recorded, the run read, the issues found, the next prompt
built, the process started), against the harness's own start-up (`claude --version`),
measured in the same run. The target is at most 0.5x (issue 36).

The agent is a shell script that writes the time it starts and ends and prints a
Claude Code result, but never submits its step: the driver tries again, `--attempts`
times, so every gap between two processes is the driver's.

    python -m benchmarks.drive_bench [--attempts 20] [--rounds 10]
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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLAUDE = ROOT / "tests" / "harnesses" / "node_modules" / ".bin" / "claude"
HANDRAIL = Path(sys.executable).parent / "handrail"
AGENT = """#!/bin/sh
date +%s.%N >> "$DRIVE_BENCH_LOG"
echo '{"type":"result","total_cost_usd":0,"usage":{"input_tokens":1,"output_tokens":1}}'
date +%s.%N >> "$DRIVE_BENCH_LOG"
"""


def gaps(folder: Path, attempts: int) -> list[float]:
    """The seconds between one agent's end and the next one's start, in one drive."""
    log = folder / "times.log"
    log.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HANDRAIL_")}
    env.update(HANDRAIL_HOME=str(folder / "home"), DRIVE_BENCH_LOG=str(log))
    done = subprocess.run(
        [
            str(HANDRAIL),
            "drive",
            "two-steps",
            "--no-bundled",
            "--workflows",
            str(folder / "workflows"),
            "--agent-command",
            str(folder / "agent.sh"),
            "--workspace",
            str(folder),
            "--attempts",
            str(attempts),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stderr
    times = [float(line) for line in log.read_text().split()]
    return [times[i + 1] - times[i] for i in range(1, len(times) - 1, 2)]


def version_seconds() -> float:
    start = time.perf_counter()
    subprocess.run([str(CLAUDE), "--version"], capture_output=True, check=True, timeout=60)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    if not CLAUDE.exists():
        print(f"{CLAUDE} is not installed (npm ci --prefix tests/harnesses)", file=sys.stderr)
        return 2
    folder = Path(tempfile.mkdtemp(prefix="drive-bench-"))
    try:
        (folder / "workflows").mkdir()
        shutil.copy(ROOT / "tests" / "drive" / "two-steps.json", folder / "workflows")
        agent = folder / "agent.sh"
        agent.write_text(AGENT)
        agent.chmod(0o755)
        driver: list[float] = []
        harness: list[float] = []
        for _ in range(args.rounds):  # interleaved, so that a busy machine slows both alike
            driver += gaps(folder, args.attempts)
            harness.append(version_seconds())
        ratio = statistics.median(driver) / statistics.median(harness)
        print(
            json.dumps(
                {
                    "driverGapMs": round(statistics.median(driver) * 1000, 1),
                    "claudeVersionMs": round(statistics.median(harness) * 1000, 1),
                    "ratio": round(ratio, 3),
                    "target": 0.5,
                    "gaps": len(driver),
                }
            )
        )
        return 0 if ratio <= 0.5 else 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
