"""The service a serving command (`start`, `serve`, `dashboard`, `drive`) runs, with every
setting of its runs made before them: the notification worker, the metrics, the tracer,
who may approve; and the threads a server keeps while it serves."""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from handrail.cli import notify_options, options
from handrail.cli.options import EXIT_USAGE
from handrail.model.errors import StorageError
from handrail.observe.logs import Log
from handrail.settings import settings


class Served(NamedTuple):
    """A server's service, and the notification worker its runs' writes wake (None
    without receivers), which `background` starts and stops."""

    service: Any
    worker: Any


def service_of(
    catalog: Any,
    args: argparse.Namespace,
    checks: Any,
    dashboard_url: str | None = None,
    people: Any = None,
    with_tokens: bool = False,
    notifying: Any = None,
    **hooks: Any,
) -> Served:
    """The service of `start` and `serve`: the catalog, the limits, the run store, the checks,
    the dashboard's address when the server serves one, and who may approve: the roles of
    `people` (the tokens file) and the channels approvals come through; `notifying`: the
    notification settings (notify_options.config_of), None: none. `hooks`: more of
    the runs' settings (runs/ledger.py's `RunSettings`: roles, observer, tracer). Every
    setting of the runs is made here, before them, and given as they are made."""
    from handrail.service.core import Service, later_runs  # lazy: loaded when the command runs
    from handrail.store.open import check_url  # lazy: loaded when the command runs

    try:
        check_url(args.database)
    except StorageError as exc:
        print(f"handrail {args.command}: --database: {exc.message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None

    public = settings(args).public_url
    if public and not public.lower().startswith(("http://", "https://")):
        print(f"handrail {args.command}: --public-url: {public!r} is not an http(s) URL", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
    chosen = getattr(args, "approval_channels", None)
    # made before the runs, which it reaches when it first delivers; started by `background`
    worker = notify_options.worker_of(notifying, lambda: service.runs.store, public or dashboard_url)
    if people is not None:
        hooks.setdefault("roles", people.roles_of)
    if worker is not None:
        hooks.update(notify=notifying, queued=worker.wake, on_close=worker.stop)

    def settled() -> Any:
        """The server's settings for its runs, made with them (on first use)."""
        from handrail.runs.approvers import default_channels  # with the runs, after `initialize`
        from handrail.runs.ledger import RunSettings  # as default_channels

        return RunSettings(
            approval_channels=chosen or default_channels(with_tokens),
            lease_seconds=settings(args).lease_seconds,
            require_presence=bool(getattr(args, "require_presence", False)),
            **hooks,
        )

    service = Service(
        catalog,
        options.limits_of(args),
        # the run modules load when the runs are first used: `initialize` needs none of them
        runs=later_runs(args.database, settled),
        runs_only=args.runs_only,
        checks=checks,
        # where a person opens the dashboard: the run's page in approval questions and notices
        dashboard_url=public or dashboard_url,
    )
    return Served(service, worker)


SWEEP_SECONDS = 5.0  # how often pending approvals are looked at for remindAfter and escalateAfter


@contextmanager
def background(served: Served) -> Iterator[None]:
    """A serving process's own threads while it serves: the notification worker (with
    receivers) and the sweep that records reminders and escalations."""
    service, worker = served
    if worker is not None:  # without receivers there is none; the runs stay unmade until used
        worker.start()
    sweeping = sweep_approvals(service)
    try:
        yield
    finally:
        if worker is not None:
            worker.stop()
        sweeping.set()


def sweep_approvals(service: Any) -> threading.Event:
    """Record reminders and escalations while the server runs (a daemon thread: it dies
    with the server); set the returned event to stop it."""
    stop = threading.Event()
    log = Log("handrail.approvals")

    def loop() -> None:
        while not stop.wait(SWEEP_SECONDS):
            try:
                service.runs.sweep_approvals()
            except Exception:  # a store that is down now may be up at the next sweep
                log.exception("recording reminders and escalations failed")

    threading.Thread(target=loop, name="handrail-approvals", daemon=True).start()
    return stop


def watched(args: argparse.Namespace, service: Any) -> tuple[Any, Any, dict[str, Any]]:
    """The metrics of `serve --metrics` (None without), whose scrapes read `service()`,
    the tracer the OTEL_* variables ask for (None: none), and the two as the runs'
    settings (`observer`, `tracer`): made before the service, given to its runs."""
    metrics = None
    if getattr(args, "metrics", False):
        from handrail.transport.metrics import Metrics  # prometheus_client: loaded only when asked

        metrics = Metrics(service)
    tracer = traced("tcp", args.shutdown_timeout)
    return metrics, tracer, {**traced_by(tracer), **({} if metrics is None else {"observer": metrics})}


def traced_by(tracer: Any) -> dict[str, Any]:
    return {} if tracer is None else {"tracer": tracer}


def roles_of(provider: Any, people: Any) -> dict[str, Any]:
    """A signed-in person's roles, from the provider's groups, when there is one."""
    return {} if provider is None else {"roles": provider.with_tokens(people).roles_of}


def traced(transport: str, shutdown_timeout: float) -> Any:
    """The tracer the OTEL_* variables ask for, for the protocol and the runs; None: none.
    Its spans are flushed at exit within `shutdown_timeout` seconds."""
    exporter = settings().traces
    if not exporter:
        return None
    try:
        from handrail.observe.tracing import tracer  # OpenTelemetry: loaded only when asked for
    except ImportError:
        print(
            "handrail: OTEL_* ask for traces, but OpenTelemetry is not installed: pip install -e '.[otel]'",
            file=sys.stderr,
        )
        return None
    return tracer(exporter, transport, shutdown_timeout)
