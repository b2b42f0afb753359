"""What the dashboard's live list costs: the JSON a page polls every 1.5 s, the list
page and a run's page, against a real `handrail serve` whose store holds N runs.

    .venv/bin/python -m benchmarks.dashboard_bench [N]

Prints p50 and p99 of sequential requests, beside `/healthz` (the transport's floor).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from tests.helpers.http import HttpServer
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

REQUESTS = 200


def main() -> int:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write(root / "flows", build_feature())
        args = (
            "--no-bundled",
            "--workflows",
            str(root / "flows"),
            "--database",
            f"sqlite:///{root / 'r.db'}",
        )
        with HttpServer(*args) as http:
            run_id = ""
            for n in range(count):
                started = http.rpc(
                    "workflow_start",
                    {"workflowId": WORKFLOW_ID, "goal": f"Goal {n}", "context": {"parts": ["a"]}},
                )
                run_id = started["result"]["runId"]
                http.rpc("workflow_continue", {"runId": run_id, "stepId": "plan", "output": f"Plan: {n}."})
            client = http.client
            client.get(http.base + "/")  # the session cookie
            print(f"{count} runs in the store, {REQUESTS} sequential requests each")
            for label, path in [
                ("GET /healthz", "/healthz"),
                ("GET /api/runs (the poll)", "/api/runs"),
                ("GET / (the list page)", "/"),
                ("GET /runs/RUN (a run page)", f"/runs/{run_id}"),
            ]:
                times = []
                for _ in range(REQUESTS):
                    start = time.perf_counter()
                    assert client.get(http.base + path).status_code == 200
                    times.append(time.perf_counter() - start)
                times.sort()
                p50 = statistics.median(times) * 1000
                p99 = times[int(len(times) * 0.99) - 1] * 1000
                print(f"| {label} | {p50:.2f} ms | {p99:.2f} ms |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
