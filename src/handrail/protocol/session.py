"""What one client session holds between its messages: whether every request stands
alone (HTTP), the session's request (who asks, the negotiated revision, the client's
capabilities and workspace), whether the client said it is ready, and the channels
back to it. The protocol keeps one; the MCP surface reads and updates it."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from handrail.model.request import Request
from handrail.protocol.client_requests import ClientRequests


@dataclass(slots=True)
class Session:
    # every request stands alone (HTTP): no handshake state, no channel back
    stateless: bool = False
    # the request every message of this session starts from (stdio): rebuilt by
    # `initialize` and when the client's roots arrive; HTTP passes one per POST instead
    # (each session names itself: the branches it claims are its own, spec/runs.md)
    # (os.urandom, as secrets.token_hex reads it: the secrets module brings base64, hmac
    # and random, which the first answer has no use for)
    request: Request = field(default_factory=lambda: Request(session="stdio:" + os.urandom(8).hex()))
    client_ready: bool = False  # set by notifications/initialized
    client_requests: ClientRequests = field(default_factory=ClientRequests)
    # server-to-client messages sent outside a reply (log records): the transport sets
    # it when it has a channel for them; the stateless HTTP transport has none
    sink: Callable[[bytes], None] | None = None
    # URL-mode approval questions sent and not yet said complete: elicitationId -> (run, seq)
    url_questions: dict[str, tuple[str, int]] = field(default_factory=dict)

    def connect(self, sink: Callable[[bytes], None] | None) -> None:
        """Where messages outside a reply go from now on (None: nowhere)."""
        self.sink = sink

    def ready(self) -> None:
        """The client said notifications/initialized."""
        self.client_ready = True

    def asking(self, request: Request) -> Request:
        """The request the session's next messages start from, given back."""
        self.request = request
        return request
