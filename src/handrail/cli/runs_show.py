"""`handrail runs show` and `list`'s rows: a run, its window of events and its tree, as
text, Markdown or JSON, marked when it was changed outside handrail."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

from handrail.cli.options import EXIT_ERRORS, EXIT_OK
from handrail.model.errors import StorageError
from handrail.model.runs import EventType
from handrail.notify.targets import shown as shown_receiver
from handrail.store.base import Notification

if TYPE_CHECKING:
    from handrail.model.request import Request  # lazy: the run modules load only for `handrail runs`
    from handrail.model.runs import Event, RunRecord
    from handrail.runs import Runs
    from handrail.store.chain import Break


def say(text: str, file: TextIO | None = None) -> None:
    """Print text a run holds: what the stream cannot encode (half of a UTF-16 pair kept by
    an older handrail, a character outside its charset) is shown as a backslash escape,
    which in JSON output is the same character, escaped."""
    stream = file or sys.stdout
    encoding = getattr(stream, "encoding", None) or "utf-8"
    print(text.encode(encoding, "backslashreplace").decode(encoding), file=stream)


def tree_lines(node: dict[str, Any], depth: int = 0, marked: str | None = None) -> list[str]:
    """One line per run of a tree: branch or step, status, holder, current step."""
    where = (
        f"#{node['branch']} "
        if "branch" in node
        else (f"{node['parentStep']} " if "parentStep" in node else "")
    )
    holder = f"  held by {node['holder']}" + (
        f" until {node['leaseUntil']}" if node.get("leaseUntil") else ""
    )
    waiting = node.get("waitingOn")
    at = node.get("currentStep") or "-"
    if waiting:
        at = f"waiting on {waiting.get('stepId')}" + (" (failed)" if waiting.get("failed") else "")
        at += f", {node['queued']} queued" if node.get("queued") else ""
    line = (
        f"{'  ' * depth}{'└ ' if depth else ''}{where}{node['runId']}  {node['status']:<10} "
        f"{node['workflowId']}  at {at}"
        + (holder if node.get("holder") else "")
        + ("  <- this run" if marked == node["runId"] else "")
    )
    lines = [line]
    for child in node.get("children", ()):
        lines.extend(tree_lines(child, depth + 1, marked))
    return lines


SHOWN_FIELDS = (
    "runId",
    "status",
    "workflowId",
    "workflowVersion",
    "goal",
    "workspace",
    "owner",
    "currentStep",
    "completed",
    "context",
    "createdAt",
    "updatedAt",
)


def run_dict(r: RunRecord) -> dict[str, Any]:
    from handrail.runs.shapes import shaped  # lazy: the run modules load only for `handrail runs`

    return shaped(r, SHOWN_FIELDS)


def as_owner(runs: Runs, run_id: str) -> Request:
    """Whoever can open the database may read and end anyone's run: act as its owner."""
    from handrail.model.request import Request  # lazy: loaded when the command runs

    found = runs.store.get(run_id)
    return Request(owner=found.owner if found is not None else None)


def show(runs: Runs, args: argparse.Namespace) -> int:
    try:
        run = runs.run(as_owner(runs, args.run_id), args.run_id)
    except StorageError as exc:
        found = runs.store.get(args.run_id) if exc.data.get("tampered") else None
        if found is None:
            raise
        run = found  # shown as the store holds it, marked (spec/runs.md)
    broken = _broken(runs, run)
    tampered = None if broken is None else "TAMPERED" + (f" at event {broken.seq}" if broken.seq else "")
    tampered = None if broken is None else f"{tampered}: {broken.problem}"
    events = runs.shown_events(run, args.events)  # a gated run's log grows with every tool call
    hidden = max(0, run.events - len(events))
    notes = runs.notifications(run)
    tree = (
        runs.tree.tree(runs.tree.root(run)) if run.parent_id is not None or _has_children(runs, run) else None
    )
    if args.format == "json":
        document: dict[str, Any] = {"run": run_dict(run), "events": [_event_dict(e) for e in events]}
        if hidden:
            document["eventsNotShown"] = hidden
        if broken is not None:
            document["tampered"] = broken.as_dict()
        if tree is not None:
            document["tree"] = tree
        if notes:
            document["notifications"] = [n.as_dict() | {"target": shown_receiver(n.target)} for n in notes]
        say(json.dumps(document, indent=2, ensure_ascii=False))
    elif args.format == "md":
        say((f"> **{tampered}**\n\n" if tampered else "") + _markdown(run, events, _hidden_line(hidden)))
    else:
        say((f"{tampered}\n" if tampered else "") + _text(run, events, _hidden_line(hidden)))
    if args.format == "md" and tree is not None:
        say("\n## Tree\n\n```\n" + "\n".join(tree_lines(tree, marked=run.id)) + "\n```")
    elif args.format == "text" and tree is not None:
        say("\ntree\n" + "\n".join("  " + line for line in tree_lines(tree, marked=run.id)))
    if args.format != "json" and (undelivered := [n for n in notes if n.last_error is not None]):
        say("\n" + "\n".join(_notification_line(n) for n in undelivered))
    return EXIT_OK if broken is None else EXIT_ERRORS


def _broken(runs: Runs, run: RunRecord) -> Break | None:
    """What of the run does not hold (its chain, signatures, row by replay), said on stderr.
    The check reads the whole log, though the page shows only its window: a resealed edit
    of the row is seen only by replaying every event."""
    broken = runs.chain_break(run)
    if broken is not None:
        say(
            f"handrail runs show: run {run.id} was changed outside handrail: {broken.problem}",
            file=sys.stderr,
        )
    return broken


def _hidden_line(hidden: int) -> str | None:
    if not hidden:
        return None
    return (
        f"({hidden} earlier event{'s' * (hidden != 1)} not shown: --events N shows more, "
        "`handrail runs export` every one)"
    )


def _has_children(runs: Runs, run: RunRecord) -> bool:
    return bool(runs.store.list_runs(parent_id=run.id, limit=1))


def _notification_line(n: Notification) -> str:
    """A notification whose delivery failed at least once: where it stands and why."""
    if n.state == "delivered":
        where = f"delivered at {n.delivered_at} after {n.attempts} attempts"
    elif n.state == "failed":
        where = f"given up after {n.attempts} attempts"
    else:
        where = f"not delivered after {n.attempts} attempts, next at {n.next_at}"
    return f"notification {n.event} to {shown_receiver(n.target)}: {where}; last error: {n.last_error}"


def _event_dict(e: Event) -> dict[str, Any]:
    return {"type": e.type, "at": e.at, **{k: v for k, v in e.as_dict().items() if k not in ("type", "at")}}


def _text(run: RunRecord, events: list[Event], hidden: str | None = None) -> str:
    step = run.current_step
    lines = [
        f"run {run.id}",
        f"  workflow   {run.workflow_id} {run.workflow_version}",
        f"  goal       {run.goal}",
        f"  status     {run.status}" + (f" at step {step['id']} ({step['title']})" if step else ""),
        f"  workspace  {run.workspace}",
        f"  completed  {run.accepted} step{'s' * (run.accepted != 1)}",
        "",
    ]
    if hidden is not None:
        lines.extend([hidden, ""])
    for e in events:
        head = f"{e.at}  {e.type:<9}" + (f" {e.step_id}" if e.step_id else "")
        lines.append(head)
        if e.type == EventType.CHECK:
            lines.extend(_check_lines(e.data))
            continue
        if e.type == EventType.MIGRATED:
            lines.append(f"    {_migrated(e.data)}")
            continue
        for key, value in e.data.items():
            if key == "output":
                lines.extend("    | " + line for line in str(value).splitlines() or [""])
            elif key == "issues":
                lines.extend(f"    ! {issue}" for issue in value)
            elif key not in ("suggestions",):
                lines.append(f"    {key}: {json.dumps(value, ensure_ascii=False)}")
    return "\n".join(lines)


def _markdown(run: RunRecord, events: list[Event], hidden: str | None = None) -> str:
    lines = [
        f"# Run `{run.id}`",
        "",
        f"- **Workflow:** `{run.workflow_id}` {run.workflow_version}",
        f"- **Goal:** {run.goal}",
        f"- **Status:** {run.status}",
        f"- **Workspace:** `{run.workspace}`",
        "",
        "## Timeline",
    ]
    if hidden is not None:
        lines.extend(["", hidden])
    for e in events:
        lines.append("")
        lines.append(f"### {e.at} · {e.type}" + (f" · `{e.step_id}`" if e.step_id else ""))
        if e.type == EventType.CHECK:
            lines.append("")
            lines.extend(line.replace("    ", "", 1) for line in _check_lines(e.data, fence=True))
            continue
        if e.type == EventType.MIGRATED:
            lines.append(f"\n{_migrated(e.data).capitalize()}")
            continue
        if "person" in e.data:
            lines.append(
                f"\nBy {e.data['person']}" + (f": {e.data['comment']}" if e.data.get("comment") else "")
            )
        if "output" in e.data:
            lines.extend(["", "```text", str(e.data["output"]).replace("```", "` ` `"), "```"])
        for issue in e.data.get("issues", []):
            lines.append(f"- ⚠ {issue}")
        if "reason" in e.data:
            lines.append(f"\nReason: {e.data['reason']}")
        if e.data.get("contextChanges"):
            lines.append(f"\nContext changes: `{json.dumps(e.data['contextChanges'], ensure_ascii=False)}`")
    return "\n".join(lines)


def _migrated(data: Any) -> str:
    from handrail.runs.migration import summary  # lazy: the run modules load only for `handrail runs`

    return summary(data)


def _check_lines(data: Any, *, fence: bool = False) -> list[str]:
    """A `check` event: pass or fail, what it looked for, why, and the command's evidence."""
    verdict = "PASS" if data.get("passed") else "FAIL"
    lines = [f"    {verdict} {data.get('check')}: {data.get('message')}", f"    {data.get('why')}"]
    if "argv" in data:
        import shlex  # lazy: only a check event that ran a command needs it

        facts = [f"ran `{shlex.join(data['argv'])}`"]
        if "exitCode" in data:
            facts.append(f"exit code {data['exitCode']}")
        if "durationMs" in data:
            facts.append(f"{data['durationMs']} ms")
        if data.get("timedOut"):
            facts.append("timed out")
        lines.append("    " + ", ".join(facts))
    if data.get("output"):
        output = str(data["output"])
        if fence:
            lines.extend(
                ["    ```text", *("    " + x for x in output.replace("```", "` ` `").splitlines()), "    ```"]
            )
        else:
            lines.extend("    | " + line for line in output.splitlines())
    return lines
