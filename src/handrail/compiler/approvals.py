"""A step's approval rule: who may approve it, how many people, and what happens while
it waits (spec/workflow-format.md, "Approvers"). The schema has checked the shapes;
this reports what only the values together can tell."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from handrail.model.errors import Reporter
from handrail.model.workflow import ANYONE, ApprovalRule

FIELDS = ("approvers", "approvals", "separateApprover", "remindAfter", "escalateAfter", "approval")
SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def seconds(duration: str) -> int:
    """`90s`, `30m`, `2h`, `1d` (the schema's pattern) in seconds."""
    return int(duration[:-1]) * SECONDS[duration[-1]]


def compile_approval(
    raw: Mapping[str, Any],
    at: str,
    workflow_default: bool,
    confirmation: object,
    report: Reporter,
    workflow_approval: Mapping[str, Any] | None = None,
) -> ApprovalRule:
    """The step's rule; `confirmation` its compiled requireConfirmation (False: it never
    waits for a person, so the fields would do nothing); `workflow_approval` the
    workflow's `approval`, the default of the step's."""
    given = [key for key in FIELDS if key in raw]
    if given and confirmation is False:
        report.warning(
            "H211",
            f"`{given[0]}` has no effect: the step never waits for a person's approval",
            f"{at}/{given[0]}",
            'add "requireConfirmation": true, or remove it',
        )
    approvers = tuple(str(a) for a in raw.get("approvers", ()))
    approvals = int(raw.get("approvals", 1))
    escalation = raw.get("escalateAfter")
    named = [a for a in approvers if not a.startswith("role:")]
    if approvers and len(named) == len(approvers) and escalation is None and approvals > len(named):
        report.error(
            "H212",
            f"`approvals` is {approvals} but only {len(named)} "
            f"{'person is' if len(named) == 1 else 'people are'} named in `approvers`",
            f"{at}/approvals",
            "name more people, add a role (`role:NAME`), or lower `approvals`",
        )
    separate = bool(raw.get("separateApprover", workflow_default))
    if not approvers and not separate and escalation is None and approvals > 1 and confirmation is not False:
        report.warning(
            "H216",
            f"`approvals` is {approvals} but the step names no `approvers`: the run's owner can "
            f"give one, so {approvals - 1} more must come from other people of the server",
            f"{at}/approvals",
            "name the approvers (a role as `role:NAME`), or lower `approvals` to 1",
        )
    remind = raw.get("remindAfter")
    rule = ApprovalRule(
        approvers=approvers,
        approvals=approvals,
        separate=separate,
        remind_after=seconds(remind) if isinstance(remind, str) else None,
        escalate_after=seconds(escalation["after"]) if isinstance(escalation, Mapping) else None,
        escalate_role=str(escalation["role"]) if isinstance(escalation, Mapping) else None,
        presence=_presence(raw.get("approval"), workflow_approval),
    )
    return ANYONE if rule == ANYONE else rule


def _presence(step: object, workflow: object) -> str | None:
    """The step's `approval.presence`, else the workflow's (the schema allows only "passkey")."""
    for given in (step, workflow):
        if isinstance(given, Mapping) and isinstance(given.get("presence"), str):
            return str(given["presence"])
    return None
