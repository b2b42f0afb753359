"""The delivery worker: a thread of a serving process that sends the outbox's
notifications (store.deliver_due) with retries and bounded exponential backoff, and
queues a stuck notification for each open run idle longer than `stuck_after`.

At least once: a row is marked delivered only after its receiver answered 2xx, so a
server killed mid-send leaves it to be sent again, with the same id. Nothing here runs
on a request's thread: a receiver that hangs slows deliveries, never answers."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from handrail.notify import events
from handrail.notify.send import post
from handrail.notify.targets import NotifyConfig, Target, shown
from handrail.store.base import Notification, Outcome, RunStore
from handrail.store.rows import later, now

log = logging.getLogger("handrail.notify")

FIRST_RETRY_S = 2.0
MAX_RETRY_S = 300.0  # backoff doubles up to this, so a receiver back from an outage is found within it
GIVE_UP_S = 3 * 86400.0  # a notification still undelivered this long after it was queued is marked failed
POLL_S = 1.0  # how often the outbox is looked at when nothing wakes the worker
FAILED_ROUND_S = 5.0  # the wait after a round the store refused (a database that went away)
BATCH = 4  # notifications claimed at once (a SQLite claim lasts store.sqlite.CLAIM_S)
IDLE_SCAN = 100  # runs looked at per stuck scan


def backoff(attempts: int) -> float:
    """Seconds before the next attempt after `attempts` failed ones."""
    return float(min(MAX_RETRY_S, FIRST_RETRY_S * 2 ** min(attempts - 1, 30)))


class Deliverer:
    def __init__(
        self,
        store: Callable[[], RunStore],
        config: NotifyConfig,
        *,
        dashboard_url: str | None = None,
        poll: float = POLL_S,
    ) -> None:
        self._store = store
        self.config = config
        self.dashboard_url = dashboard_url
        self.poll = poll
        self._targets = {t.spec: t for t in config.targets}
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="handrail-notify", daemon=True)
        self._next_scan = 0.0

    def start(self) -> Deliverer:
        self._thread.start()
        return self

    def wake(self) -> None:
        """Something was queued: look at the outbox now rather than at the next poll."""
        self._wake.set()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            try:
                sent = self.once()
            except Exception as exc:  # a database that went away: say so, try again later
                log.warning("notification delivery failed: %s", exc)
                self._stop.wait(FAILED_ROUND_S)
                continue
            if not sent:
                self._wake.wait(self.poll)

    def once(self) -> int:
        """One round: the stuck scan when it is due, then one batch of deliveries."""
        store = self._store()
        if time.monotonic() >= self._next_scan:
            self._next_scan = time.monotonic() + min(60.0, max(0.5, self.config.stuck_after / 4))
            self.scan(store)
        return store.deliver_due(self.send, BATCH)

    def scan(self, store: RunStore) -> int:
        added = 0
        at = now()
        for run in store.idle_runs(later(-self.config.stuck_after), IDLE_SCAN):
            notes = events.stuck(self.config, run, at, dashboard_url=self.dashboard_url)
            added += store.notify_idle(run, notes)
        return added

    def send(self, notification: Notification) -> Outcome:
        target = self._targets.get(notification.target) or _parsed(notification.target)
        if target is None:
            return Outcome(False, f"{notification.target!r} is not a receiver handrail can post to")
        event = notification.payload
        if event.get("link") is None and (link := self.config.link(notification.run_id, self.dashboard_url)):
            event = {**event, "link": link}  # queued by `handrail runs`, which serves no page
        error = post(target, notification.id, event, self.config.secret)
        if error is None:
            return Outcome(True)
        attempts = notification.attempts + 1
        log.info(
            "notification %s to %s: %s (attempt %d)", notification.id, shown(target.spec), error, attempts
        )
        if notification.created_at < later(-GIVE_UP_S):
            return Outcome(False, error)
        return Outcome(False, error, later(backoff(attempts)))


def _parsed(spec: str) -> Target | None:
    """A target queued by a server started with other --notify values: still delivered."""
    try:
        return Target.parse(spec)
    except ValueError:
        return None
