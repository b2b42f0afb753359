"""A step's gate policy as the compiler and the gate's hook both hold it: classes of
slots (model/slotted.py) in a module that imports nothing else of handrail, so the hook
loads neither the workflow model nor dataclasses to compile one step's policy
(rules/policy.py)."""

from collections.abc import Callable

from handrail.model.slotted import Slotted

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


class GateRule(Slotted):
    """One rule of a step's policy, compiled: `matches(kind, target)` says whether it
    covers an action (kind edit, read, shell, mcp, web or tool; see spec/gate.md)."""

    __slots__ = ("kind", "matches", "message", "text")

    def __init__(
        self,
        text: str,  # the rule as written: `edit:docs/**`
        kind: str,
        message: str | None,
        matches: Callable[[str, str], bool],
    ) -> None:
        self.text = text
        self.kind = kind
        self.message = message
        self.matches = matches


class Policy(Slotted):
    """What the agent may do while a step is current: only what `allow` lists (None:
    anything), less what `deny` lists. Slotted, not dataclasses: the gate's hook
    compiles one step's policy on every tool call."""

    __slots__ = ("allow", "deny")

    def __init__(
        self,
        allow: tuple[GateRule, ...] | None,
        deny: tuple[GateRule, ...],
    ) -> None:
        self.allow = allow
        self.deny = deny
