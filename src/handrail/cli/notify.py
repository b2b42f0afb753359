"""`handrail notify test URL`: a sample notification posted to a receiver, to see that
it arrives (spec/notify.md), and the one-time approval link `runs approve|decline` sends
out of band. The options a server takes are notify_options.py's."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from handrail.cli.notify_options import add_secret_option
from handrail.cli.options import EXIT_ERRORS, EXIT_OK, EXIT_USAGE
from handrail.model.runs import RunRecord, RunStatus
from handrail.notify.events import TEST, approval_link, payload
from handrail.notify.send import post
from handrail.notify.targets import NotifyConfig, Target, TargetError, shown
from handrail.settings import settings
from handrail.store.outbox import new_id
from handrail.store.rows import now

if TYPE_CHECKING:
    from handrail.runs import Runs

LOCAL_DASHBOARD = "http://localhost:8766"  # as cli/runs.py: where a link goes when no notification names it


def add_notify(notify: argparse.ArgumentParser) -> None:
    verbs = notify.add_subparsers(dest="verb", metavar="VERB", required=True)
    test = verbs.add_parser("test", help="POST a sample event to URL and say how it went")
    test.add_argument(
        "url", metavar="URL", help="a receiver: https://..., slack:https://... or teams:https://..."
    )
    add_secret_option(test)
    test.add_argument("--public-url", default=None, metavar="URL", help="the dashboard's address in the link")


def notify_command(args: argparse.Namespace) -> int:
    try:
        target = Target.parse(args.url)
    except ValueError as exc:
        print(f"handrail notify test: {exc}", file=sys.stderr)
        return EXIT_USAGE
    given = settings(args)
    at = now()
    run = RunRecord(
        id="run_" + "0" * 32,
        owner="handrail",
        workspace="/path/to/project",
        workflow_id="sample-workflow",
        workflow_version="1.0.0",
        source_hash="",
        goal="a sample notification from `handrail notify test`",
        status=RunStatus.AWAITING_APPROVAL,
        context={},
        position={},
        accepted=0,
        created_at=at,
        updated_at=at,
        version=1,
    )
    link = NotifyConfig((target,), public_url=given.public_url).link(run.id, None)
    event = payload(
        TEST, run, at=at, person="handrail", step={"id": "sample", "title": "A sample step"}, link=link
    )
    error = post(target, new_id(), event, given.notify_secret)
    if error is not None:
        print(f"handrail notify test: {target.url}: not delivered: {error}", file=sys.stderr)
        return EXIT_ERRORS
    signed = "signed" if given.notify_secret else "unsigned"
    print(f"delivered a sample {target.format} notification ({signed}) to {target.url}")
    return EXIT_OK


def send_link(
    runs: Runs, run_id: str, person: str, approve: bool, comment: str | None
) -> tuple[list[str], str, bool] | None:
    """A one-time link for `person`'s decision on the run, sent now to the receivers the
    run's own notifications went to (runs/links.py); the receivers that took it, as they
    may be shown, when it expires, and whether it was signed (HANDRAIL_NOTIFY_SECRET).
    None: the run's notifications go nowhere, or no receiver took it (said on stderr)."""
    from handrail.runs.links import receivers  # the run modules load with `handrail runs`

    run = runs.store.get(run_id)
    if run is None:
        return None
    specs, base = receivers(run_id, runs.notifications(run))
    targets: list[Target] = []
    for spec in specs:
        try:
            targets.append(Target.parse(spec))
        except TargetError:
            continue
    if not targets:
        return None
    token, link = runs.links.issue(run, person, approve, comment, [shown(t.spec) for t in targets])
    url = f"{(base or LOCAL_DASHBOARD).rstrip('/')}/runs/{run_id}/link/{token}"
    event = approval_link(
        run, at=now(), person=person, link=url, decision=link.decision, expires=link.expires
    )
    took: list[str] = []
    for target in targets:
        error = post(target, new_id(), event, settings().notify_secret)
        if error is None:
            took.append(shown(target.spec))
        else:
            print(
                f"handrail runs: the approval link was not delivered to {shown(target.spec)}: {error}",
                file=sys.stderr,
            )
    return (took, link.expires, bool(settings().notify_secret)) if took else None
