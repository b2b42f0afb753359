"""What the server tells an observer as it works (`handrail serve --metrics`).

The layers that do the work (protocol, runs) hold an `Observer` or None and call it
only when one is set, so a server without metrics pays one attribute test per event
and the request path itself is left as it is (the protocol wraps its handler table
only when an observer is given). transport/metrics.py is the one implementation.
"""

from __future__ import annotations

from typing import Protocol


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
