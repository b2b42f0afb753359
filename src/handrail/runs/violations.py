"""What a tool call changed, judged by the rules of the current step (spec/gate.md,
"Effects, not words"): pure functions. The gate's hook finds the changes (a file,
a ref, a config key, a file of the gate's installation) however they were made, and
this says which of them the step forbids, in the same words a refusal beforehand
would have used: a changed file is judged as an edit of that file, a ref that
gained commits as `git commit`, and the gate's own installation may never change
while a run is active.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from typing import Any

from handrail.runs.gate import ACTIVE, Action, GateEvent, Options, Protected, RunFacts
from handrail.runs.gate_decision import decide

VIOLATION = "violation"  # EventType.VIOLATION, whose module the hook does not load
SHOWN_CHANGES = 20  # how many changes an event and the agent's message name one by one


class Change(NamedTuple):
    what: str  # file | ref | installation
    target: str  # file, installation: an absolute path (a config key for git's hook keys); ref: its name
    change: str  # added | modified | deleted | commits | ...
    old: str = ""  # ref: the object it held (empty: it did not exist)
    new: str = ""  # ref: the object it holds now


class Forbidden(NamedTuple):
    change: Change
    reason: str


def forbidden(
    run: RunFacts | None,
    changes: Iterable[Change],
    options: Options,
    protected: Protected,
    session: str | None = None,
) -> list[Forbidden]:
    """The changes the run's current step forbids; none without an active run."""
    if run is None or run.status not in ACTIVE:
        return []
    found: list[Forbidden] = []
    for change in changes:
        if change.what == "installation":
            found.append(
                Forbidden(
                    change,
                    f"handrail: {change.target} holds the gate's installation, which stays as it was "
                    f"while run {run.run_id} is active",
                )
            )
            continue
        if change.what == "file":
            action = Action("edit", change.target, "effect")
        elif change.what == "ref" and change.change == "commits":
            action = Action("shell", "git commit", "effect")
        else:
            continue
        event = GateEvent("before-tool", run.workspace, session, action=action)
        decision = decide(run, event, options, protected)
        if decision.verdict in ("deny", "block"):
            found.append(Forbidden(change, decision.text))
    return found


def message(run: RunFacts, found: Sequence[Forbidden], undone: Sequence[str], kept: Sequence[str]) -> str:
    """What the agent is told: what was undone, why, and where it was kept."""
    where = f"step '{run.step_id}' ({run.step_number} of {run.step_count}, run {run.run_id})"
    shown = "; ".join(undone[:SHOWN_CHANGES]) + (" ..." if len(undone) > SHOWN_CHANGES else "")
    text = (
        f"handrail: the last tool call changed what {where} does not allow, and the gate undid it: "
        f"{shown}. Why: {found[0].reason}"
    )
    if kept:
        text += f" The changes are kept for the person in {', '.join(kept)}."
    return text + " Do the step's work within its rules, or finish it with workflow_continue."


def event_data(
    kind: str,
    found: Sequence[Forbidden],
    undone: Sequence[str],
    kept: Sequence[str],
    session: str | None,
    tool: str | None,
) -> dict[str, Any]:
    """The `violation` event: what changed, why it is forbidden, how it was undone."""
    data: dict[str, Any] = {
        "event": kind,
        "changes": [
            {"what": f.change.what, "target": f.change.target[:300], "change": f.change.change}
            | ({"old": f.change.old, "new": f.change.new} if f.change.what == "ref" else {})
            for f in found[:SHOWN_CHANGES]
        ],
        "count": len(found),
        "reason": found[0].reason[:600] if found else "",
        "undone": [line[:300] for line in undone[:SHOWN_CHANGES]],
        "kept": list(kept),
    }
    if session:
        data["session"] = session[:100]
    if tool:
        data["tool"] = tool[:100]
    return data
