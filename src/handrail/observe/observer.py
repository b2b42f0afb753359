"""What the server tells an observer as it works (`handrail serve --metrics`).

The run layer always holds an `Observer` and a `Tracer`: `NULL_OBSERVER` and
`NULL_TRACER` when nothing watches, so its write path calls them without asking whether
they are on. The protocol wraps its handler table only when an observer or tracer is
given, so the request path of a server without them is left as it is.
transport/metrics.py is the one observer, handrail/observe/tracing.py the one tracer.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol


class Observer(Protocol):
    def request(self, method: str, tool: str, outcome: str, seconds: float) -> None:
        """One MCP request answered: `tool` is "" for methods that name no tool; `outcome`
        is "ok", "tool_error" (a result with isError) or "error" (a JSON-RPC error)."""

    def check(self, kind: str, outcome: str, seconds: float) -> None:
        """One check the server ran: `kind` command|file|git, `outcome` passed|failed."""

    def store_retry(self) -> None:
        """A write met a run another writer had moved (compare-and-set): it is tried again."""

    def store_error(self) -> None:
        """A write to the run store failed with an error of the database."""


class Span(Protocol):
    def set(self, key: str, value: str | int | float | bool) -> None:
        """An attribute learned while the span is open (an outcome, an error's type)."""


class Tracer(Protocol):
    """Spans of the work a request does (handrail/observe/tracing.py: OpenTelemetry)."""

    def request(
        self,
        method: str,
        tool: str,
        meta: Mapping[str, Any] | None,
        request_id: str | None = None,
        session_id: str | None = None,
    ) -> AbstractContextManager[Span]:
        """The span of one MCP request, continuing the client's trace when `meta` (its
        `params._meta`) carries a `traceparent`; `request_id`: its JSON-RPC id as a string,
        `session_id`: the MCP session it belongs to (None: none)."""

    def span(self, name: str, **attributes: str | int | float | bool) -> AbstractContextManager[Span]:
        """A child of the current span (a store write, an approval)."""

    def finished(self, name: str, start_ns: int, end_ns: int, **attributes: str | int | float | bool) -> None:
        """A child span for work timed already (one check of several run together)."""


class _NullObserver:
    """Told everything, keeps nothing: the observer of a server without metrics."""

    __slots__ = ()

    def request(self, method: str, tool: str, outcome: str, seconds: float) -> None:
        pass

    def check(self, kind: str, outcome: str, seconds: float) -> None:
        pass

    def store_retry(self) -> None:
        pass

    def store_error(self) -> None:
        pass


class _NullSpan:
    __slots__ = ()

    def set(self, key: str, value: str | int | float | bool) -> None:
        pass


class _NullTracer:
    """Opens spans that record nothing: the tracer of a server without traces. Its one
    context manager is made once and entered again by every span."""

    __slots__ = ("_open",)

    def __init__(self) -> None:
        self._open: AbstractContextManager[Span] = nullcontext(_NullSpan())

    def request(
        self,
        method: str,
        tool: str,
        meta: Mapping[str, Any] | None,
        request_id: str | None = None,
        session_id: str | None = None,
    ) -> AbstractContextManager[Span]:
        return self._open

    def span(self, name: str, **attributes: str | int | float | bool) -> AbstractContextManager[Span]:
        return self._open

    def finished(self, name: str, start_ns: int, end_ns: int, **attributes: str | int | float | bool) -> None:
        pass


NULL_OBSERVER: Observer = _NullObserver()
NULL_TRACER: Tracer = _NullTracer()
