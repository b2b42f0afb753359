"""Every request's budget: a deadline, and a bound on the size of what it renders.

`Service.call` opens one budget per request (`with spend(seconds, reply_bytes):`);
the code that can run long checks it cooperatively: the engine once per loop
iteration, the backtracking regex engine as its time limit, schema validators at
each `$ref` they follow, the compiler once per step. Past the deadline `check()`
raises `OverBudget` naming `maxRequestSeconds`, so a hostile request ends with a
clear error instead of running on. Outside a request (the library, `handrail
check`) there is no budget and the checks cost one context-variable read.

The budget lives in a context variable, so each thread of a worker pool (and each
task) sees only its own request's budget. It also carries the time limit of one
backtracking regex search (`regexTimeoutMs`), so each `Service` in a process applies
its own: outside a request the limit is `limits.REGEX_TIMEOUT_MS`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass

from handrail.errors import HandrailError
from handrail.limits import REGEX_TIMEOUT_MS


class OverBudget(HandrailError):
    """A request ran past its time budget, or would have answered more than it may."""

    code = -32000
    title = "Request over its budget"


@dataclass(slots=True)
class Budget:
    deadline: float  # time.monotonic() past which the request is cut off
    seconds: int
    reply_bytes: int
    regex_ms: int = REGEX_TIMEOUT_MS  # one search on the backtracking regex engine
    rendered: int = 0  # characters templates have produced so far in this request


_current: ContextVar[Budget | None] = ContextVar("handrail_budget", default=None)


@contextmanager
def spend(seconds: int, reply_bytes: int, regex_ms: int = REGEX_TIMEOUT_MS) -> Iterator[Budget]:
    """The budget of one request, for the code that runs inside the `with`."""
    budget = _new(seconds, reply_bytes, regex_ms)
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)


def begin(seconds: int, reply_bytes: int, regex_ms: int = REGEX_TIMEOUT_MS) -> Token[Budget | None]:
    """`spend` without the `with`, for the request path: pass the token to `end`."""
    if regex_ms <= 0:
        raise ValueError("the regex time limit is a positive number of milliseconds")
    return _current.set(Budget(time.monotonic() + seconds, seconds, reply_bytes, regex_ms))


def _new(seconds: int, reply_bytes: int, regex_ms: int) -> Budget:
    if regex_ms <= 0:
        raise ValueError("the regex time limit is a positive number of milliseconds")
    return Budget(time.monotonic() + seconds, seconds, reply_bytes, regex_ms)


def end(token: Token[Budget | None]) -> None:
    _current.reset(token)


def current() -> Budget | None:
    return _current.get()


def regex_ms() -> int:
    """The time limit of one backtracking regex search in the running request."""
    budget = _current.get()
    return REGEX_TIMEOUT_MS if budget is None else budget.regex_ms


def check() -> None:
    """Raise OverBudget when the running request is past its deadline."""
    budget = _current.get()
    if budget is not None and time.monotonic() > budget.deadline:
        raise over_time(budget)


def remaining() -> float | None:
    """Seconds left to the running request (never negative), None outside a request."""
    budget = _current.get()
    if budget is None:
        return None
    return max(0.0, budget.deadline - time.monotonic())


def over_time(budget: Budget) -> OverBudget:
    return OverBudget(
        data={
            "details": f"the request ran past its time budget of {budget.seconds} s and was stopped",
            "limit": "maxRequestSeconds",
            "value": budget.seconds,
        }
    )


def render(size: int) -> None:
    """Count `size` more characters rendered by templates in this request; past
    `maxReplyBytes` the request stops before building a reply it may not send."""
    budget = _current.get()
    if budget is None:
        return
    budget.rendered += size
    if budget.rendered > budget.reply_bytes:
        raise over_size(budget.rendered, "the text rendered from the step's templates")


def reply_limit() -> int | None:
    budget = _current.get()
    return None if budget is None else budget.reply_bytes


def over_size(size: int, what: str) -> OverBudget:
    """`what` (a rendered text, a reply) is `size` bytes, past `maxReplyBytes`."""
    limit = reply_limit() or 0
    return OverBudget(
        data={
            "details": f"{what} would be at least {size} bytes, over the limit of {limit}",
            "limit": "maxReplyBytes",
            "value": limit,
        }
    )
