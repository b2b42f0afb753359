"""A step's gate policy as the compiler and the gate's hook both hold it: NamedTuples
in a module that imports nothing of handrail, so the hook loads neither the workflow
model nor dataclasses to compile one step's policy (rules/policy.py)."""

from collections.abc import Callable
from typing import NamedTuple

# handrail's own run tools: always allowed, so a rule that denies them never applies
OWN_SERVER = "handrail"
OWN_TOOLS = (
    "workflow_start",
    "workflow_continue",
    "workflow_resume",
    "workflow_abandon",
    "workflow_list",
    "workflow_claim",
)


class GateRule(NamedTuple):
    """One rule of a step's policy, compiled: `matches(kind, target)` says whether it
    covers an action (kind edit, read, shell, mcp, web or tool; see spec/gate.md)."""

    text: str  # the rule as written: `edit:docs/**`
    kind: str
    message: str | None
    matches: Callable[[str, str], bool]


class Policy(NamedTuple):
    """What the agent may do while a step is current: only what `allow` lists (None:
    anything), less what `deny` lists. NamedTuples, not dataclasses: the gate's hook
    compiles one step's policy on every tool call."""

    allow: tuple[GateRule, ...] | None
    deny: tuple[GateRule, ...]
