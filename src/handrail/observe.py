"""What the server tells an observer as it works (`handrail serve --metrics`).

The layers that do the work (protocol, runs) hold an `Observer` or None and call it
only when one is set, so a server without metrics pays one attribute test per event
and the request path itself is left as it is (the protocol wraps its handler table
only when an observer is given). transport/metrics.py is the one implementation.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
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
    """Spans of the work a request does (handrail/tracing.py: OpenTelemetry)."""

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
