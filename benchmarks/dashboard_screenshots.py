"""Screenshots of the dashboard for the README: docs/dashboard-runs.png and
docs/dashboard-run.png, taken in Debian's chromium with the tests' Playwright setup.

    .venv/bin/python -m benchmarks.dashboard_screenshots

Starts a real `handrail serve` on a temporary store, moves a few runs over MCP
(one with a rejected attempt, one finished, one just started), then shoots.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.dashboard.browser import chromium
from tests.http import HttpServer
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

DOCS = Path(__file__).resolve().parent.parent / "docs"


def main() -> int:
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

            def call(tool: str, arguments: dict[str, object]) -> dict[str, object]:
                reply: dict[str, object] = http.rpc(tool, arguments)["result"]
                return reply

            def start(goal: str, parts: list[str]) -> str:
                started = call(
                    "workflow_start", {"workflowId": WORKFLOW_ID, "goal": goal, "context": {"parts": parts}}
                )
                return str(started["runId"])

            done = start("Add a dark mode toggle", ["settings page"])
            for step, output in [
                ("plan", "Plan: a toggle on the settings page, stored in the profile."),
                ("build", "Built the toggle; `prefers-color-scheme` is the default."),
                ("report", "Done: toggle shipped behind no flag."),
            ]:
                call("workflow_continue", {"runId": done, "stepId": step, "output": output})
            audited = start("Rate-limit the public API", ["middleware", "config"])
            call("workflow_continue", {"runId": audited, "stepId": "plan", "output": "I will add a limiter."})
            call(
                "workflow_continue",
                {
                    "runId": audited,
                    "stepId": "plan",
                    "output": "Plan:\n\n1. A token-bucket **middleware** per API key.\n"
                    "2. Limits in `config.toml`, hot-reloaded.\n\n```python\nLIMIT = 100  # per minute\n```",
                },
            )
            call(
                "workflow_continue", {"runId": audited, "stepId": "build", "output": "Built the middleware."}
            )
            start("Fix the flaky login test", ["test"])
            with chromium() as browser:
                page = browser.new_page(viewport={"width": 1280, "height": 640})
                page.goto(http.base + "/")
                page.screenshot(path=str(DOCS / "dashboard-runs.png"))
                page.set_viewport_size({"width": 1280, "height": 1100})
                page.goto(f"{http.base}/runs/{audited}")
                page.locator(".graph svg").wait_for()
                page.screenshot(path=str(DOCS / "dashboard-run.png"))
    print(f"wrote {DOCS / 'dashboard-runs.png'} and {DOCS / 'dashboard-run.png'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
