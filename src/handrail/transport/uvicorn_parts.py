"""The parts of uvicorn that `handrail serve` changes: a header timeout on each
connection, and a server that returns on SIGINT or SIGTERM. Imported only when HTTP is
served, as uvicorn is."""

from __future__ import annotations

import asyncio
from types import FrameType

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, plus the header timeout it lacks: a connection whose
    next request's headers have not all arrived `header_timeout` seconds after it opened
    (or after the previous answer) is closed, so half-sent requests cannot pile up."""

    header_timeout = 10.0  # set per server by with_header_timeout

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    _header_timer: asyncio.TimerHandle | None = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        # One timer per connection: the previous one would hold its answered request
        # for the whole timeout, so memory would grow with the request rate.
        self._disarm()
        waiting_after = self.cycle  # the request answered last (None: none yet)
        self._header_timer = self.loop.call_later(self.header_timeout, self._header_timeout, waiting_after)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timeout(self, waiting_after: object) -> None:
        if self.cycle is waiting_after and not self.transport.is_closing():
            self.transport.close()


def with_header_timeout(seconds: float) -> type[HeaderTimeoutProtocol]:
    """The protocol class uvicorn builds for each connection, with this server's timeout."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout": seconds})


class Server(uvicorn.Server):
    """Stops on SIGINT or SIGTERM and returns, so that `handrail serve` exits 0 as
    `handrail start` does (uvicorn would raise the signal again once stopped)."""

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self._captured_signals.clear()
