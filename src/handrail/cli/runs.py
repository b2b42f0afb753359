"""`handrail runs`: list, show and abandon runs, for people (see spec/runs.md).

Also the `--database` and `--runs-only` options that `start` and `serve` share.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from handrail.cli.migrate import add_migrate_verb
from handrail.cli.notify_options import queued_from_environment
from handrail.cli.options import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, add_database_option, missing_database
from handrail.cli.record import add_record_verbs, record_command
from handrail.cli.runs_show import as_owner, run_dict, say, show, tree_lines
from handrail.model.errors import HandrailError, InvalidParams, RunNotActive, RunNotFound
from handrail.model.runs import ACTIVE_STATUSES, STATUSES, RunStatus
from handrail.settings import settings
from handrail.store.base import LOCAL_OWNER

if TYPE_CHECKING:
    from handrail.model.runs import RunRecord
    from handrail.runs import Runs
    from handrail.runs.ledger import RunSettings

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
    try:
        given = _run_settings(args, verb)
    except HandrailError as exc:
        return _failed(args, verb, exc)
    runs = default_runs(args.database, reading=verb in READING_VERBS, settings=given)
    try:
        if verb == "list":
            return _list(runs, args)
        if verb == "show":
            return show(runs, args)
        if verb in ("approve", "decline"):
            return _decide(runs, args)
        handler = getattr(args, "runs_handler", None)
        if handler is not None:  # a verb of another module (`migrate`)
            code: int = handler(runs, args)
            return code
        return _abandon(runs, args)
    except HandrailError as exc:
        return _failed(args, verb, exc)
    finally:
        runs.close()


def _failed(args: argparse.Namespace, verb: str, exc: HandrailError) -> int:
    details = exc.data.get("details")
    if isinstance(exc, RunNotFound):  # the wire message leaves the id to `data`
        details = f"`{args.run_id}` (`handrail runs list` shows the runs)"
    elif isinstance(details, str) and details in exc.message:  # said once is enough
        details = None
    say(f"handrail runs {verb}: {exc.message}" + (f": {details}" if details else ""), file=sys.stderr)
    return EXIT_ERRORS


def _run_settings(args: argparse.Namespace, verb: str) -> RunSettings:
    """The settings of the runs `handrail runs VERB` writes: the notifications its writes
    queue (HANDRAIL_NOTIFY) and, for a decision, the roles of the tokens file."""
    from handrail.runs.ledger import RunSettings  # lazy: the run modules load only for `handrail runs`

    notify = queued_from_environment(f"runs {verb}")
    tokens = settings(args).tokens_file or None
    if verb not in ("approve", "decline") or tokens is None:
        return RunSettings(notify=notify)
    from handrail.service.people import People, TokensFileError  # only with a tokens file

    try:
        return RunSettings(notify=notify, roles=People.load(tokens).roles_of)
    except TokensFileError as exc:
        raise InvalidParams(f"--tokens: {exc}") from None


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
        say(json.dumps({"runs": [run_dict(r) for r in found]}, indent=2, ensure_ascii=False))
        return EXIT_OK
    for r in found:
        step = r.current_step
        where = step["id"] if step else ("-" if r.status != RunStatus.ACTIVE else "(waiting for context)")
        if not step and r.status == RunStatus.ACTIVE and "waitingOn" in r.position:
            where = "(waiting for its children)"
        owner = "" if r.owner == LOCAL_OWNER else f"  [{r.owner}]"  # a served run: whose it is
        tampered = "  TAMPERED: " + "; ".join(r.tampered) if r.tampered else ""  # spec/runs.md
        say(
            f"{r.id}  {r.status:<10} {r.workflow_id:<24} {where:<24} {r.updated_at}  {r.goal[:60]}{owner}"
            + tampered
        )
    say(("\n" if found else "") + f"{len(found)} run{'s' * (len(found) != 1)}")
    return EXIT_OK


def _list_tree(runs: Runs, found: list[RunRecord], args: argparse.Namespace) -> int:
    """The listed runs as trees: each listed run whose parent is not listed, with every
    run below it (listed or not), indented."""
    listed = {r.id for r in found}
    trees = [runs.tree.tree(r) for r in found if r.parent_id not in listed]
    if args.format == "json":
        say(json.dumps({"runs": trees}, indent=2, ensure_ascii=False))
        return EXIT_OK
    for tree in trees:
        say("\n".join(tree_lines(tree)))
    say(("\n" if trees else "") + f"{len(trees)} tree{'s' * (len(trees) != 1)}")
    return EXIT_OK


def _abandon(runs: Runs, args: argparse.Namespace) -> int:
    from handrail.runs.abandons import ByPerson  # lazy: the run modules load only for `handrail runs`
    from handrail.runs.presence import PresenceNeeded  # lazy: as the line above

    try:
        # the command line is a channel the agent shares: a run only a person may end,
        # watched by the gate, is ended with the person's passkey on the dashboard
        result = runs.abandon(as_owner(runs, args.run_id), args.run_id, args.reason, ByPerson(shared=True))
    except PresenceNeeded as exc:
        return _needs_presence(args, exc)
    except RunNotActive as exc:  # its advice (start a new run) is for an agent
        status = exc.data.get("status")
        raise RunNotActive(data={**exc.data, "details": f"the run is already {status}"}) from None
    print(f"run {result['runId']} abandoned")
    return EXIT_OK


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
    say(f"handrail runs {args.runs_command}: {message}", file=sys.stderr)
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
    say(
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
    from handrail.model.approvals import local_person  # lazy: loaded only when the command runs
    from handrail.runs.presence import (  # lazy: the run modules load only for `handrail runs`
        GATE_WATCHES,
        PresenceNeeded,
    )

    person = args.person or local_person()
    try:
        # a served run is its owner's; the person decides
        # the command line is always a channel the agent shares: it runs as the same user
        result = runs.decide(
            as_owner(runs, args.run_id),
            args.run_id,
            "approve" if args.runs_command == "approve" else "decline",
            person=person,
            comment=args.comment,
            shared=True,
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
        say(
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
