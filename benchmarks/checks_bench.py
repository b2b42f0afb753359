"""What a check costs beyond the work it stands for, each beside its baseline measured
in the same run:

* command: `evaluate_checks` on `["true"]` (new session, output pipe, the kill of
  the group) against `subprocess.run(["true"])`;
* file: a `**/*.py` glob with `contains` over a tree of files against `os.walk` +
  `fnmatch` + reading the same files;
* git: `changes` and `clean` against one `git status --porcelain` call.

    python -m benchmarks.checks_bench            # prints a table, writes benchmarks/results/checks.json
    python -m benchmarks.checks_bench --quick    # fewer repeats, a smaller tree

The tests check the answers (tests/checks/), never these times.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
GIT = ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.com", "-c", "commit.gpgsign=false"]


def _median_ms(fn: Callable[[], Any], repeats: int) -> float:
    fn()  # warm: imports, caches
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _tree(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / "src" / f"pkg{i % 20}" / f"mod{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"file{i}.py").write_text(f"def f{i}():\n    return {i}\n" * 20)
    (root / "src" / "pkg0" / "mod0" / "last.py").write_text("# NEEDLE\n")


def compiled_checks(checks: list[dict[str, Any]], origin: str = "source") -> tuple[Any, ...]:
    """The checks, compiled as a step of a workflow of that origin carries them."""
    from handrail.compiler import compile_text

    document = {
        "id": "workflow",
        "name": "Checks",
        "description": "A step with checks.",
        "version": "1.0.0",
        "steps": [{"id": "checked", "title": "Checked", "prompt": "Do it.", "checks": checks}],
    }
    compiled = compile_text(json.dumps(document), "<checks>", origin=origin)  # type: ignore[arg-type]
    assert compiled.workflow is not None, [d.render() for d in compiled.errors]
    assert compiled.workflow.origin == origin
    return tuple(compiled.workflow.nodes["checked"].checks)  # type: ignore[union-attr]


def run(quick: bool) -> dict[str, Any]:
    from handrail.checks import CheckConfig, evaluate_checks, git_baseline

    repeats = 5 if quick else 30
    files = 300 if quick else 3000
    config = CheckConfig(allow_commands=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        _tree(root, files)
        subprocess.run([*GIT, "init", "-q"], cwd=root, check=True)
        subprocess.run([*GIT, "add", "-A"], cwd=root, check=True)
        subprocess.run([*GIT, "commit", "-q", "-m", "tree"], cwd=root, check=True)
        baseline = git_baseline(str(root))
        (root / "src" / "pkg1" / "mod1" / "new.py").write_text("x = 1\n")

        command = compiled_checks([{"type": "command", "run": ["true"], "message": "m"}])
        rows.append(
            {
                "what": "command check `true`",
                "handrail_ms": _median_ms(
                    lambda: evaluate_checks(command, folder, {}, None, config, "source"), repeats
                ),
                "baseline": "subprocess.run(['true'])",
                "baseline_ms": _median_ms(lambda: subprocess.run(["true"], check=False), repeats),
            }
        )

        file_check = compiled_checks(
            [{"type": "file", "path": "src/**/*.py", "contains": "NEEDLE", "message": "m"}]
        )

        def walk_and_read() -> bool:
            matching = []  # every match first, as a check without `contains` needs them all
            for top, _dirs, names in os.walk(root / "src"):
                matching.extend(os.path.join(top, n) for n in names if fnmatch.fnmatch(n, "*.py"))
            for path in sorted(matching):
                with open(path, "rb") as handle:
                    if b"NEEDLE" in handle.read(1_000_000):
                        return True
            return False

        rows.append(
            {
                "what": f"file check `src/**/*.py` contains NEEDLE, {files} files",
                "handrail_ms": _median_ms(
                    lambda: evaluate_checks(file_check, folder, {}, None, config, "source"), repeats
                ),
                "baseline": "os.walk + fnmatch, then read the matches in order until found",
                "baseline_ms": _median_ms(walk_and_read, repeats),
            }
        )

        git_check = compiled_checks([{"type": "git", "changes": True, "clean": True, "message": "m"}])
        rows.append(
            {
                "what": f"git check changes + clean, {files} tracked files",
                "handrail_ms": _median_ms(
                    lambda: evaluate_checks(git_check, folder, {}, baseline, config, "source"), repeats
                ),
                "baseline": "git status --porcelain",
                "baseline_ms": _median_ms(
                    lambda: subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True),
                    repeats,
                ),
            }
        )
    for row in rows:
        row["ratio"] = row["handrail_ms"] / row["baseline_ms"]
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "quick": quick,
        "repeats": repeats,
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--output", type=Path, default=RESULTS / "checks.json")
    args = parser.parse_args(argv)
    report = run(args.quick)
    print(f"{'what':<58} {'handrail':>10} {'baseline':>10} {'ratio':>6}")
    for row in report["rows"]:
        print(
            f"{row['what']:<58} {row['handrail_ms']:>8.2f}ms {row['baseline_ms']:>8.2f}ms "
            f"{row['ratio']:>5.2f}x   (baseline: {row['baseline']})"
        )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
