"""The notification options of the serving commands, the delivery worker they start,
and `handrail notify test URL` (spec/notify.md)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from handrail.notify.events import TEST, approval_link, payload
from handrail.notify.send import post
from handrail.notify.targets import (
    FAILURES_IN_A_ROW,
    STUCK_AFTER_S,
    NotifyConfig,
    Target,
    TargetError,
    parse_duration,
    shown,
)
from handrail.settings import settings
from handrail.store.base import RunRecord, RunStatus
from handrail.store.outbox import new_id
from handrail.store.rows import now

if TYPE_CHECKING:
    from handrail.runs import Runs

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2  # as cli/options.py, which loads cli/runs, which loads this
LOCAL_DASHBOARD = "http://localhost:8766"  # as cli/runs.py: where a link goes when no notification names it


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def add_secret_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--notify-secret",
        default=None,
        metavar="SECRET",
        help="sign notifications with this key (or HANDRAIL_NOTIFY_SECRET; `whsec_`+base64 also read)",
    )


def add_notify_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--notify",
        action="append",
        default=[],
        metavar="URL",
        help="POST run notifications to URL; slack:URL and teams:URL send those services' messages "
        "(repeatable; or HANDRAIL_NOTIFY, separated by spaces)",
    )
    add_secret_option(parser)
    parser.add_argument(
        "--public-url",
        default=None,
        metavar="URL",
        help="the dashboard's address, for the run pages named in notifications and approval questions "
        "(or HANDRAIL_PUBLIC_URL; default the server's)",
    )
    parser.add_argument(
        "--stuck-after",
        type=_duration,
        default=STUCK_AFTER_S,
        metavar="TIME",
        help="notify when an open run has been idle this long: seconds, or 90s, 30m, 2h (default 30m)",
    )
    parser.add_argument(
        "--notify-after-failures",
        type=_count,
        default=FAILURES_IN_A_ROW,
        metavar="N",
        help=f"notify when the same check fails N times in a row (default {FAILURES_IN_A_ROW})",
    )


def config_of(args: argparse.Namespace) -> NotifyConfig | None:
    """The notification settings of the options and the environment: None without any
    receiver; a usage error (said on stderr) when one cannot be used."""
    given = settings(args)
    if not given.notify:
        return None
    try:
        targets = tuple(dict.fromkeys(Target.parse(spec) for spec in given.notify))
    except ValueError as exc:
        print(f"handrail {args.command}: --notify: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None
    if given.public_url:
        try:
            Target.parse(given.public_url)
        except ValueError:
            print(
                f"handrail {args.command}: --public-url: {given.public_url!r} is not an http(s) URL",
                file=sys.stderr,
            )
            raise SystemExit(EXIT_USAGE) from None
    return NotifyConfig(
        targets,
        secret=given.notify_secret,
        public_url=given.public_url,
        stuck_after=args.stuck_after,
        failures_in_a_row=args.notify_after_failures,
    )


def start_worker(runs: Runs, config: NotifyConfig | None) -> Any:
    """Queue notifications with every run write and deliver them from a thread; None
    without receivers."""
    if config is None:
        return None
    from handrail.notify.worker import Deliverer  # a thread's module: loaded by servers that notify

    runs.ledger.notify = config
    worker = Deliverer(lambda: runs.store, config, dashboard_url=runs.ledger.dashboard_url).start()
    runs.ledger.queued = worker.wake
    runs.ledger.on_close = worker.stop  # before the store closes, so it is not opened again
    return worker


def queue_from_environment(runs: Runs, command: str) -> None:
    """`handrail runs` writes runs without serving them: the notifications its writes
    cause (HANDRAIL_NOTIFY) are queued in the store, for a server's worker to deliver."""
    given = settings()
    if not given.notify:
        return
    try:
        targets = tuple(dict.fromkeys(Target.parse(spec) for spec in given.notify))
    except ValueError as exc:
        print(f"handrail {command}: HANDRAIL_NOTIFY: {exc}; no notifications are queued", file=sys.stderr)
        return
    runs.ledger.notify = NotifyConfig(targets, public_url=given.public_url)


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


def add_notify_parser(sub: Any) -> None:
    notify = sub.add_parser("notify", help="send a sample notification to a webhook receiver")
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
