"""What one client session holds between its messages: whether every request stands
alone (HTTP), the session's request (who asks, the negotiated revision, the client's
capabilities and workspace), whether the client said it is ready, and the channels
back to it. The protocol keeps one; the MCP surface reads and updates it."""

from __future__ import annotations

import os
from collections.abc import Callable

from handrail.model.request import Request
from handrail.protocol.client_requests import ClientRequests


class Session:
    """(Slotted by hand, not a dataclass: a server makes the class before its first answer,
    and a session is never compared nor copied.)"""

    __slots__ = ("client_ready", "client_requests", "request", "sink", "stateless", "url_questions")

    def __init__(self, stateless: bool = False) -> None:
        # every request stands alone (HTTP): no handshake state, no channel back
        self.stateless = stateless
        # the request every message of this session starts from (stdio): rebuilt by
        # `initialize` and when the client's roots arrive; HTTP passes one per POST instead
        # (each session names itself: the branches it claims are its own, spec/runs.md;
        # os.urandom, as secrets.token_hex reads it: the secrets module brings base64, hmac
        # and random, which the first answer has no use for)
        self.request = Request(session="stdio:" + os.urandom(8).hex())
        self.client_ready = False  # set by notifications/initialized
        self.client_requests = ClientRequests()  # server -> client requests
        # server-to-client messages sent outside a reply (log records): the transport sets
        # it when it has a channel for them; the stateless HTTP transport has none
        self.sink: Callable[[bytes], None] | None = None
        # URL-mode approval questions sent and not yet said complete: elicitationId -> (run, seq)
        self.url_questions: dict[str, tuple[str, int]] = {}

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
