"""A read and writes against a SQLite run store whose write lock another process holds.

A `handrail serve` over a fresh database; another process takes the write lock
(BEGIN IMMEDIATE) and keeps it; then `--writers` workflow_continue calls go in at
once, and a moment later one workflow_resume. Prints how long the read took, how
long each write took to fail and with what, and the ratio of the read to the slowest
write: reads answer from their own WAL connections, so the read should not wait.

    python -m benchmarks.store_lock [--writers 6]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.helpers.http import HttpServer
from tests.helpers.locks import write_lock_held
from tests.runs.workflows import WORKFLOW_ID, build_feature, write


def measure(writers: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="handrail-lock-") as folder:
        tmp = Path(folder)
        write(tmp / "flows", build_feature())
        database = tmp / "runs.db"
        args = ("--no-bundled", "--workflows", str(tmp / "flows"), "--database", f"sqlite://{database}")
        with HttpServer(*args, "--workers", str(writers + 4)) as http:
            http.client.timeout = 120
            run = http.rpc("workflow_start", {"workflowId": WORKFLOW_ID, "goal": "Bench"})["result"]["runId"]
            with write_lock_held(database):
                writes: list[tuple[float, str]] = []

                def submit() -> None:
                    began = time.perf_counter()
                    reply = http.rpc(
                        "workflow_continue", {"runId": run, "stepId": "plan", "output": "Plan: x"}
                    )
                    error = reply.get("error") or reply["result"].get("structuredContent") or {}
                    writes.append((time.perf_counter() - began, str(error.get("code", "ok"))))

                threads = [threading.Thread(target=submit) for _ in range(writers)]
                for thread in threads:
                    thread.start()
                time.sleep(0.5)  # the writers are waiting on the lock
                began = time.perf_counter()
                http.rpc("workflow_resume", {"runId": run})
                read_s = time.perf_counter() - began
                for thread in threads:
                    thread.join()
    slowest = max(s for s, _ in writes)
    return {
        "writers": writers,
        "readSeconds": round(read_s, 3),
        "writeSeconds": sorted(round(s, 3) for s, _ in writes),
        "writeAnswers": sorted({code for _, code in writes}),
        "readOverSlowestWrite": round(read_s / slowest, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--writers", type=int, default=6)
    print(json.dumps(measure(parser.parse_args().writers), indent=2))


if __name__ == "__main__":
    main()
