"""The scripted agent's side of a run of the bundled `coding-task`: the calls it makes
to handrail's MCP tools, and outputs that do what each step's prompt asks."""

from __future__ import annotations

import json
from typing import Any

from tests.gate.real_harness.anthropic_model import Request, Step, Turn, say, use

GOAL = "Give the cart's total a discount"
UNDERSTAND = (
    "The cart's total must take a discount. The change belongs in src/cart.py, whose total() "
    "sums the prices it is given; nothing else calls it yet. I expect to change src/cart.py only: "
    "total() gains a discount argument, the fraction taken off the sum.\n\n"
    "Acceptance criteria\n"
    "- total([10, 10], 0.5) is 10\n"
    "- total(prices) without a discount is the sum, as before\n"
    "- the project's test command passes\n"
)
UNDERSTOOD = {"taskSize": "small", "touchesPublicApi": False, "openQuestions": 0}
PARTS = [
    {"title": "total takes a discount", "files": ["src/cart.py"], "check": "grep -q discount src/cart.py"}
]
IMPLEMENTED = "Wrote total(prices, discount). Ran `grep -q discount src/cart.py`: it passed."
VERIFIED = (
    "Ran the test command: it passes. Read the whole diff: one function changed, no debug output.\n\n"
    "Files changed\n- src/cart.py: total() takes a discount and takes it off the sum.\n\n"
    "How to verify\n- run `grep -q discount src/cart.py` and the project's test command; both pass.\n"
)
DISCOUNTED = "def total(prices, discount=0.0):\n    return sum(prices) * (1 - discount)\n"


class Run:
    """One run as the agent knows it: its id, read from the answer to workflow_start.
    `tools`: how the harness names handrail's tools (`mcp__handrail__` from an MCP
    config, `mcp__plugin_handrail_handrail__` from the plugin)."""

    def __init__(self, workspace: str, tools: str = "mcp__handrail__") -> None:
        self.workspace = workspace
        self.tools = tools
        self.id: str | None = None
        self.answers: list[dict[str, Any]] = []  # each answer of handrail's tools, in order

    def start(self) -> Turn:
        return use(
            self.tools + "workflow_start", workflowId="coding-task", goal=GOAL, workspace=self.workspace
        )

    def read(self, request: Request) -> None:
        """Keep the answer to the last call, when it was one of handrail's."""
        try:
            answer = json.loads(request.last_result_text())
        except ValueError:
            return
        if isinstance(answer, dict) and "runId" in answer:
            self.id = self.id or str(answer["runId"])
            self.answers.append(answer)

    def then(self, turn: Turn) -> Step:
        """`turn`, once the answer to the call before it is read."""

        def played(request: Request) -> Turn:
            self.read(request)
            return turn

        return played

    def finish(self, step: str, output: str, context: dict[str, Any] | None = None) -> Step:
        """workflow_continue for `step`, with this output (and context)."""

        def played(request: Request) -> Turn:
            self.read(request)
            assert self.id is not None, (
                f"no run id before finishing {step}: {request.last_result_text()[:300]}"
            )
            given: dict[str, Any] = {"runId": self.id, "stepId": step, "output": output}
            if context is not None:
                given["context"] = context
            return use(self.tools + "workflow_continue", **given)

        return played

    def up_to_implementing(self) -> list[Step]:
        """From the start to the implement step: understand and plan done, as they ask."""
        return [
            self.start(),
            self.finish("understand", UNDERSTAND, UNDERSTOOD),
            self.finish("plan", json.dumps({"parts": PARTS}), {"planParts": PARTS}),
        ]


def stops(count: int) -> list[Step]:
    """What the agent says each time a stop is refused and it tries to stop again."""
    return [say(f"Stopping (try {n}).") for n in range(2, count + 2)]
