"""`handrail runs`: list, show and abandon runs, for people (see spec/runs.md).

Also the `--database` and `--runs-only` options that `start` and `serve` share.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

from handrail.cli.migrate import add_migrate_verb
from handrail.cli.notify_options import queue_from_environment
from handrail.cli.options import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, add_database_option, missing_database
from handrail.cli.record import add_record_verbs, record_command
from handrail.errors import HandrailError, InvalidParams, RunNotActive, RunNotFound, StorageError
from handrail.notify.targets import shown as shown_receiver
from handrail.settings import settings
from handrail.store import ACTIVE_STATUSES
from handrail.store.base import LOCAL_OWNER, STATUSES, EventType, Notification, RunStatus

if TYPE_CHECKING:
    from handrail.runs import Runs
    from handrail.runs.request import Request  # lazy: the run modules load only for `handrail runs`
    from handrail.store import Event, RunRecord
    from handrail.store.chain import Break

RUN_HELP = "the run's id, run_... (`handrail runs list` shows them)"
READING_VERBS = ("list", "show")  # the file is not checked whole for them (store/sqlite.py)
SHOWN_EVENTS = 200  # `runs show`'s last events: its cost stays the same however long the log


def add_runs(runs: argparse.ArgumentParser) -> None:
    """The `runs` command's verbs, with those of other modules: `verify` and `export`
    (record.py), `migrate` (migrate.py, which sets `runs_handler` to its own function)."""
    verbs = runs.add_subparsers(dest="runs_command", metavar="VERB")
    listing = verbs.add_parser("list", help="runs, most recently updated first")
    listing.add_argument(
        "--status",
        choices=[*(str(s) for s in STATUSES), "open"],
        help="only runs in this state (open: active or awaiting approval)",
    )
    listing.add_argument("--workspace", default=None, metavar="FOLDER", help="only runs of this folder")
    listing.add_argument(
        "--limit", type=_count, default=100, metavar="N", help="at most N runs (default 100)"
    )
    listing.add_argument("--format", choices=["text", "json"], default="text", help="default text")
    listing.add_argument("--json", dest="format", action="store_const", const="json", help="as --format json")
    listing.add_argument(
        "--tree", action="store_true", help="each run with its branches and child runs indented below it"
    )
    add_database_option(listing)
    show = verbs.add_parser(
        "show", help="one run's timeline: its accepted steps and last events, with time, output and issues"
    )
    show.add_argument("run_id", metavar="RUN", help=RUN_HELP)
    show.add_argument(
        "--events",
        type=_event_count,
        default=SHOWN_EVENTS,
        metavar="N",
        help=f"how many of the last events to show besides every accepted step (default {SHOWN_EVENTS}; "
        "`handrail runs export` gives them all)",
    )
    show.add_argument(
        "--format", choices=["text", "json", "md"], default="text", help="text (default), json or Markdown"
    )
    add_database_option(show)
    for verb, what in (("approve", "approve"), ("decline", "decline (send back to the agent)")):
        decide = verbs.add_parser(verb, help=f"{what} the step a run is waiting on a person for")
        decide.add_argument("run_id", metavar="RUN", help=RUN_HELP)
        decide.add_argument("--comment", default=None, metavar="TEXT", help="a note for the run's record")
        decide.add_argument(
            "--as",
            dest="person",
            default=None,
            metavar="NAME",
            help="who decides (default: your user name); held to the step's approvers",
        )
        decide.add_argument(
            "--tokens",
            default=None,
            metavar="FILE",
            help="the server's tokens file, for the roles a step's approvers name "
            "(default $HANDRAIL_TOKENS_FILE)",
        )
        add_database_option(decide)
    abandon = verbs.add_parser("abandon", help="end a run that will not be finished")
    abandon.add_argument("run_id", metavar="RUN", help=RUN_HELP)
    abandon.add_argument(
        "--reason",
        default="abandoned from the command line",
        metavar="TEXT",
        help="why, for the run's record",
    )
    add_database_option(abandon)
    add_record_verbs(verbs, add_database_option, RUN_HELP)
    add_migrate_verb(verbs)
    runs.set_defaults(runs_parser=runs)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count of runs (0 or more)")
    return value


def _event_count(text: str) -> int:
    try:
        return _count(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count of events (0 or more)") from None


def _no_database(args: argparse.Namespace, path: str) -> int:
    if args.runs_command == "migrate" and args.run_id is None:  # `--workflow ID`
        print(f"handrail runs {args.runs_command}: no run database at {path}", file=sys.stderr)
        return EXIT_ERRORS
    if args.runs_command != "list":
        print(
            f"handrail runs {args.runs_command}: Run not found: `{args.run_id}` (no run database at {path})",
            file=sys.stderr,
        )
        return EXIT_ERRORS
    print(f"handrail runs list: no run database at {path} yet", file=sys.stderr)
    print(json.dumps({"runs": []}, indent=2) if args.format == "json" else "0 runs")
    return EXIT_OK


def runs_command(args: argparse.Namespace) -> int:
    verb = getattr(args, "runs_command", None)
    if verb is None:
        args.runs_parser.print_help(sys.stderr)
        return EXIT_USAGE
    if verb in ("verify", "export"):
        return record_command(args)
    from handrail.service.core import default_runs  # lazy: the service loads only for `handrail runs`

    if (unfit := _not_utf8(args)) is not None:
        print(f"handrail runs {verb}: {unfit}", file=sys.stderr)
        return EXIT_USAGE
    missing = missing_database(args.database)
    if missing is not None:
        return _no_database(args, missing)
    runs = default_runs(args.database, reading=verb in READING_VERBS)
    queue_from_environment(runs, f"runs {verb}")
    try:
        if verb == "list":
            return _list(runs, args)
        if verb == "show":
            return _show(runs, args)
        if verb in ("approve", "decline"):
            return _decide(runs, args)
        handler = getattr(args, "runs_handler", None)
        if handler is not None:  # a verb of another module (`migrate`)
            code: int = handler(runs, args)
            return code
        return _abandon(runs, args)
    except HandrailError as exc:
        details = exc.data.get("details")
        if isinstance(exc, RunNotFound):  # the wire message leaves the id to `data`
            details = f"`{args.run_id}` (`handrail runs list` shows the runs)"
        elif isinstance(details, str) and details in exc.message:  # said once is enough
            details = None
        _say(f"handrail runs {verb}: {exc.message}" + (f": {details}" if details else ""), file=sys.stderr)
        return EXIT_ERRORS
    finally:
        runs.close()


# the arguments a run keeps or looks up as text, as the command line names them
_TEXT_ARGUMENTS = {
    "run_id": "RUN",
    "workspace": "--workspace",
    "comment": "--comment",
    "person": "--as",
    "owner": "--owner",
    "workflow_id": "--workflow",
}


def _not_utf8(args: argparse.Namespace) -> str | None:
    """What to say of an argument whose bytes are not UTF-8 (Python hands them over as
    lone surrogates, which the store cannot take), or None."""
    for dest, shown in _TEXT_ARGUMENTS.items():
        value = getattr(args, dest, None)
        if not isinstance(value, str):
            continue
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            quoted = os.fsencode(value).decode("utf-8", "backslashreplace")
            return f"{shown} `{quoted}` is not UTF-8 text; give it in UTF-8"
    return None


def _say(text: str, file: TextIO | None = None) -> None:
    """Print text a run holds: what the stream cannot encode (half of a UTF-16 pair kept by
    an older handrail, a character outside its charset) is shown as a backslash escape,
    which in JSON output is the same character, escaped."""
    stream = file or sys.stdout
    encoding = getattr(stream, "encoding", None) or "utf-8"
    print(text.encode(encoding, "backslashreplace").decode(encoding), file=stream)


def _list(runs: Runs, args: argparse.Namespace) -> int:
    statuses = None
    if args.status == "open":
        statuses = list(ACTIVE_STATUSES)
    elif args.status:
        statuses = [args.status]
    workspace = os.path.abspath(args.workspace) if args.workspace else None
    found = runs.everyones(workspace=workspace, statuses=statuses, limit=args.limit)
    if args.tree:
        return _list_tree(runs, found, args)
    if args.format == "json":
        _say(json.dumps({"runs": [_run_dict(r) for r in found]}, indent=2, ensure_ascii=False))
        return EXIT_OK
    for r in found:
        step = r.current_step
        where = step["id"] if step else ("-" if r.status != RunStatus.ACTIVE else "(waiting for context)")
        if not step and r.status == RunStatus.ACTIVE and "waitingOn" in r.position:
            where = "(waiting for its children)"
        owner = "" if r.owner == LOCAL_OWNER else f"  [{r.owner}]"  # a served run: whose it is
        tampered = "  TAMPERED: " + "; ".join(r.tampered) if r.tampered else ""  # spec/runs.md
        _say(
            f"{r.id}  {r.status:<10} {r.workflow_id:<24} {where:<24} {r.updated_at}  {r.goal[:60]}{owner}"
            + tampered
        )
    _say(("\n" if found else "") + f"{len(found)} run{'s' * (len(found) != 1)}")
    return EXIT_OK


def _list_tree(runs: Runs, found: list[RunRecord], args: argparse.Namespace) -> int:
    """The listed runs as trees: each listed run whose parent is not listed, with every
    run below it (listed or not), indented."""
    listed = {r.id for r in found}
    trees = [runs.tree.tree(r) for r in found if r.parent_id not in listed]
    if args.format == "json":
        _say(json.dumps({"runs": trees}, indent=2, ensure_ascii=False))
        return EXIT_OK
    for tree in trees:
        _say("\n".join(tree_lines(tree)))
    _say(("\n" if trees else "") + f"{len(trees)} tree{'s' * (len(trees) != 1)}")
    return EXIT_OK


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


def _run_dict(r: RunRecord) -> dict[str, Any]:
    from handrail.runs.shapes import shaped  # lazy: the run modules load only for `handrail runs`

    return shaped(r, SHOWN_FIELDS)


def _as_owner(runs: Runs, run_id: str) -> Request:
    """Whoever can open the database may read and end anyone's run: act as its owner."""
    from handrail.runs.request import Request  # lazy: loaded when the command runs

    found = runs.store.get(run_id)
    return Request(owner=found.owner if found is not None else None)


def _show(runs: Runs, args: argparse.Namespace) -> int:
    try:
        run = runs.run(_as_owner(runs, args.run_id), args.run_id)
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
        document: dict[str, Any] = {"run": _run_dict(run), "events": [_event_dict(e) for e in events]}
        if hidden:
            document["eventsNotShown"] = hidden
        if broken is not None:
            document["tampered"] = broken.as_dict()
        if tree is not None:
            document["tree"] = tree
        if notes:
            document["notifications"] = [n.as_dict() | {"target": shown_receiver(n.target)} for n in notes]
        _say(json.dumps(document, indent=2, ensure_ascii=False))
    elif args.format == "md":
        _say((f"> **{tampered}**\n\n" if tampered else "") + _markdown(run, events, _hidden_line(hidden)))
    else:
        _say((f"{tampered}\n" if tampered else "") + _text(run, events, _hidden_line(hidden)))
    if args.format == "md" and tree is not None:
        _say("\n## Tree\n\n```\n" + "\n".join(tree_lines(tree, marked=run.id)) + "\n```")
    elif args.format == "text" and tree is not None:
        _say("\ntree\n" + "\n".join("  " + line for line in tree_lines(tree, marked=run.id)))
    if args.format != "json" and (undelivered := [n for n in notes if n.last_error is not None]):
        _say("\n" + "\n".join(_notification_line(n) for n in undelivered))
    return EXIT_OK if broken is None else EXIT_ERRORS


def _broken(runs: Runs, run: RunRecord) -> Break | None:
    """What of the run does not hold (its chain, signatures, row by replay), said on stderr.
    The check reads the whole log, though the page shows only its window: a resealed edit
    of the row is seen only by replaying every event."""
    broken = runs.chain_break(run)
    if broken is not None:
        _say(
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


def _abandon(runs: Runs, args: argparse.Namespace) -> int:
    try:
        result = runs.abandon(_as_owner(runs, args.run_id), args.run_id, args.reason)
    except RunNotActive as exc:  # its advice (start a new run) is for an agent
        status = exc.data.get("status")
        raise RunNotActive(data={**exc.data, "details": f"the run is already {status}"}) from None
    print(f"run {result['runId']} abandoned")
    return EXIT_OK


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


LOCAL_DASHBOARD = "http://localhost:8766"  # `handrail dashboard`'s address (localhost: passkeys need a name)


def _needs_presence(args: argparse.Namespace, exc: HandrailError) -> int:
    """Nothing was decided: say so and where the person signs it, and open that page
    for a person at a terminal."""
    page = exc.data.get("page")
    message = exc.message
    if not isinstance(page, str):  # no server named its dashboard: the local one's page (notifications
        # queued here keep no such link: the server that delivers them names its own)
        page = f"{LOCAL_DASHBOARD}/runs/{args.run_id}"
        message = message.replace("on the run's page of the dashboard", f"on the run's page {page}")
    _say(f"handrail runs {args.runs_command}: {message}", file=sys.stderr)
    if isinstance(page, str) and sys.stdin.isatty() and sys.stdout.isatty():
        import webbrowser  # lazy: only a person at a terminal is sent to the page

        webbrowser.open(page)
    return EXIT_ERRORS


def _link_sent(runs: Runs, args: argparse.Namespace, person: str) -> bool:
    """Where the run's notifications go somewhere, a one-time link for this decision sent
    there (runs/links.py): said on stderr, the link itself never shown, since this
    terminal is one the agent shares. False: no channel took it."""
    from handrail.cli.notify import send_link  # the notification modules load here only

    sent = send_link(runs, args.run_id, person, args.runs_command == "approve", args.comment)
    if sent is None:
        return False
    where, expires, signed = sent
    _say(
        f"handrail runs {args.runs_command}: run {args.run_id}: this decision needs the person, and the "
        f"gate watches this run from this machine and user, so it is not taken here. A one-time "
        f"{'signed ' if signed else ''}link to {args.runs_command} it as {person} was sent to "
        f"{', '.join(where)}, the channels the run's notifications go to; the person decides by "
        f"opening it there (until {expires}). The link is not shown here: this terminal is one the "
        "agent shares.",
        file=sys.stderr,
    )
    return True


def _decide(runs: Runs, args: argparse.Namespace) -> int:
    from handrail.runs.approvals import local_person  # lazy: the run modules load only for `handrail runs`
    from handrail.runs.presence import GATE_WATCHES, PresenceNeeded  # as local_person

    person = args.person or local_person()
    tokens = settings(args).tokens_file or None
    if tokens is not None:
        from handrail.service.people import People, TokensFileError  # only with a tokens file

        try:
            runs.ledger.roles = People.load(tokens).roles_of
        except TokensFileError as exc:
            raise InvalidParams(f"--tokens: {exc}") from None
    decide = runs.approve if args.runs_command == "approve" else runs.decline
    try:
        # a served run is its owner's; the person decides
        # the command line is always a channel the agent shares: it runs as the same user
        result = decide(
            _as_owner(runs, args.run_id), args.run_id, person=person, comment=args.comment, shared=True
        )
    except PresenceNeeded as exc:
        # only the shared channel's reason lets a link do: the workflow's or the server's asks for the passkey
        shared = GATE_WATCHES in str(exc.data.get("details", ""))
        if shared and _link_sent(runs, args, person):
            return EXIT_ERRORS  # nothing is decided until the person opens the link
        return _needs_presence(args, exc)
    except RunNotActive as exc:
        if exc.data.get("status") != RunStatus.ACTIVE.value:
            raise
        # "Run is not active: the run is active" is the wire's title; say what happened
        _say(
            f"handrail runs {args.runs_command}: run {args.run_id} waits for no approval: it is "
            "active, and no submission of its current step is waiting for a person",
            file=sys.stderr,
        )
        return EXIT_ERRORS
    if "approvals" in result:  # one of several people the step needs
        print(f"run {result['runId']}: {result['message']}")
    elif args.runs_command == "approve":
        step = result.get("step")
        after = (
            f"; now at step {step['id']}" if isinstance(step, dict) else f"; the run is {result['status']}"
        )
        print(f"run {result['runId']}: approved by {person}{after}")
    else:
        print(f"run {result['runId']}: declined by {person}; the agent must submit the step again")
    return EXIT_OK
