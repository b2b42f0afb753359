"""The notification options of the serving commands (and of `handrail runs`, which
queues what its writes notify) and the delivery worker a server starts (spec/notify.md).
`handrail notify test` is notify.py's: a server loads none of its sending modules."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from handrail.cli.options import EXIT_USAGE, positive_int
from handrail.notify import FAILURES_IN_A_ROW, STUCK_AFTER_S
from handrail.settings import settings

if TYPE_CHECKING:
    from handrail.notify.targets import NotifyConfig
    from handrail.store import RunStore


def _duration(text: str) -> float:
    # lazy: the receivers' module loads when one is given, not with every server's options
    from handrail.notify.targets import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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
        type=positive_int,
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
    from handrail.notify.targets import NotifyConfig, Target  # lazy: a receiver is given

    try:
        targets = Target.parse_all(given.notify)
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


def worker_of(config: NotifyConfig | None, store: Callable[[], RunStore], dashboard_url: str | None) -> Any:
    """The thread that delivers the store's outbox, made (not started) before the runs
    whose writes wake it: `store` reaches their store when it first delivers. None
    without receivers."""
    if config is None:
        return None
    from handrail.notify.worker import Deliverer  # a thread's module: loaded by servers that notify

    return Deliverer(store, config, dashboard_url=dashboard_url)


def queued_from_environment(command: str) -> NotifyConfig | None:
    """`handrail runs` writes runs without serving them: the notifications its writes
    cause (HANDRAIL_NOTIFY) are queued in the store, for a server's worker to deliver;
    None: none are."""
    given = settings()
    if not given.notify:
        return None
    from handrail.notify.targets import NotifyConfig, Target  # lazy: a receiver is given

    try:
        targets = Target.parse_all(given.notify)
    except ValueError as exc:
        print(f"handrail {command}: HANDRAIL_NOTIFY: {exc}; no notifications are queued", file=sys.stderr)
        return None
    return NotifyConfig(targets, public_url=given.public_url)
