"""What a run's events notify (notify/events.py), read from the events a write appends:
the same check failing N times in a row is reported once, at the Nth failure."""

from __future__ import annotations

from handrail.model.runs import Event, EventType, NewEvent
from handrail.notify.events import notices
from handrail.notify.targets import NotifyConfig, Target, parse_duration, shown
from tests.store.test_store import record

CONFIG = NotifyConfig(
    (Target.parse("https://a.test/"), Target.parse("slack:https://b.test/")), failures_in_a_row=3
)
LINT = {"check": "command", "pointer": "/steps/0/checks/0", "passed": False, "message": "Lint passes"}
TESTS = {"check": "command", "pointer": "/steps/0/checks/1", "passed": False, "message": "Tests pass"}


def logged(*checks: dict[str, object]) -> list[Event]:
    return [Event(i, EventType.CHECK, "t", "ann", "s1", c) for i, c in enumerate(checks, 1)]


def kinds(history: list[Event], *new: dict[str, object]) -> list[tuple[str, str]]:
    events = [NewEvent(EventType.CHECK, "s1", c) for c in new]
    return [
        (n.event, n.target)
        for n in notices(CONFIG, record("r1"), events, "ann", lambda: history, dashboard_url=None)
    ]


def test_the_third_failure_in_a_row_of_one_check_is_reported_to_every_target_once() -> None:
    assert kinds(logged(LINT), LINT) == []
    assert kinds(logged(LINT, LINT), LINT) == [
        ("run.check_failing", "https://a.test/"),
        ("run.check_failing", "slack:https://b.test/"),
    ]
    assert kinds(logged(LINT, LINT, LINT), LINT) == []  # the fourth is the same streak


def test_a_pass_or_another_check_failing_between_does_not_count_towards_the_streak() -> None:
    assert kinds(logged(LINT, {**LINT, "passed": True}, LINT), LINT) == []
    assert kinds(logged(LINT, TESTS, LINT, TESTS), LINT) == [
        ("run.check_failing", "https://a.test/"),
        ("run.check_failing", "slack:https://b.test/"),
    ]


def test_the_log_is_read_only_when_a_check_failed() -> None:
    def unread() -> list[Event]:
        raise AssertionError("the history was read")

    events = [NewEvent(EventType.CHECK, "s1", {**LINT, "passed": True}), NewEvent(EventType.ACCEPTED, "s1")]
    assert notices(CONFIG, record("r1"), events, "ann", unread, dashboard_url=None) == []


def test_durations_read_seconds_and_units() -> None:
    assert [parse_duration(t) for t in ("90", "90s", "30m", "2h", "1d", "0.5")] == [
        90,
        90,
        1800,
        7200,
        86400,
        0.5,
    ]


def test_a_receiver_is_shown_without_the_path_that_holds_its_secret() -> None:
    assert shown("slack:https://hooks.slack.com/services/T0/B0/XXXX") == "slack:https://hooks.slack.com/..."
    assert shown("https://user:pw@example.com:8443/hook?key=1") == "https://example.com:8443/..."
    assert shown("http://127.0.0.1:9000") == "http://127.0.0.1:9000"


def test_a_partial_approval_a_reminder_and_an_escalation_each_notify_every_target() -> None:
    events = [
        NewEvent(EventType.APPROVAL_GIVEN, "s1", {"person": "bea", "via": "dashboard"}),
        NewEvent(EventType.REMINDED, "s1", {}),
        NewEvent(EventType.ESCALATED, "s1", {"role": "lead"}),
    ]
    made = notices(CONFIG, record("r1"), events, "ann", lambda: [], dashboard_url=None)
    assert [n.event for n in made[::2]] == [
        "run.approval_given",
        "run.approval_reminder",
        "run.approval_escalated",
    ]
    assert made[0].payload["person"] == "bea" and made[4].payload["details"] == {"role": "lead"}
