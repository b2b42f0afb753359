"""Screenshots of the dashboard for the README: docs/dashboard-runs.png and
docs/dashboard-run.png, taken in Debian's chromium with the tests' Playwright setup.

    .venv/bin/python -m benchmarks.dashboard_screenshots

Starts a real `handrail serve` on a temporary store, moves a few runs over MCP
(one finished, one midway, one just started, and a release whose tests failed once
and which waits for a person's approval), then shoots.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.dashboard.browser import chromium
from tests.dashboard.test_dashboard_browser import gated
from tests.helpers.http import HttpServer
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

DOCS = Path(__file__).resolve().parent.parent / "docs"


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write(root / "flows", build_feature())
        write(root / "flows", gated(sys.executable))
        workspace = root / "ws"
        workspace.mkdir()
        args = (
            "--no-bundled",
            "--workflows",
            str(root / "flows"),
            "--database",
            f"sqlite:///{root / 'r.db'}",
            "--allow-commands",
        )
        with HttpServer(*args) as http:

            def call(tool: str, arguments: dict[str, object]) -> dict[str, object]:
                answer = http.rpc(tool, arguments)
                assert "result" in answer, answer
                reply: dict[str, object] = answer["result"]
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
            release = str(
                call(
                    "workflow_start",
                    {"workflowId": "gated", "goal": "Release 2.0", "workspace": str(workspace)},
                )["runId"]
            )
            call("workflow_continue", {"runId": release, "stepId": "tests", "output": "All green."})
            (workspace / "ok").write_text("")
            call(
                "workflow_continue",
                {
                    "runId": release,
                    "stepId": "tests",
                    "output": "Fixed `test_login`: the session cookie was not sent.",
                },
            )

            call(
                "workflow_continue",
                {
                    "runId": release,
                    "stepId": "ship",
                    "output": "Tagged **v2.0**; the changelog is in `CHANGES.md`.",
                },
            )
            with chromium() as browser:
                page = browser.new_page(viewport={"width": 1280, "height": 640})
                page.goto(http.base + "/")
                page.screenshot(path=str(DOCS / "dashboard-runs.png"))
                page.set_viewport_size({"width": 1280, "height": 1100})
                page.goto(f"{http.base}/runs/{release}")
                page.locator(".graph svg").wait_for()
                page.screenshot(path=str(DOCS / "dashboard-run.png"))
    print(f"wrote {DOCS / 'dashboard-runs.png'} and {DOCS / 'dashboard-run.png'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
