"""Who is asking, and how they can be answered: one immutable value per request.

A transport builds it (stdio once per session, HTTP per POST, the dashboard and the
runs CLI for the person they act for) and passes it down explicitly: the protocol
adds what the message itself says (its protocol revision, the client's capabilities),
the MCP surface adds the approver for a `workflow_continue`, and the service and the
run operations read it as an argument. Nothing about who asks lives in a global.

The request's budget (deadline, reply size, regex time) is not here: the service
opens it from its own limits when the request reaches it (see model/budget.py for why the
code deep inside a compiled workflow reads it from a context variable).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from handrail.model.slotted import Frozen

if TYPE_CHECKING:
    from handrail.model.approvals import Approver

NO_CAPABILITIES: Mapping[str, Any] = MappingProxyType({})


class Request(Frozen):
    """(A Frozen value, not a dataclass: every server makes the class before its first
    answer; `_replace` makes a changed copy.)"""

    __slots__ = (
        "approver",
        "capabilities",
        "lease",
        "message_id",
        "modern",
        "owner",
        "scope",
        "session",
        "version",
        "workspace",
    )

    owner: str | None
    approver: Approver | None
    version: str | None
    modern: bool
    capabilities: Mapping[str, Any]
    workspace: str | None
    scope: str | None
    session: str | None
    lease: str | None
    message_id: str | None

    def __init__(
        self,
        # the person a token (HTTP), a dashboard session or the runs CLI names; None: the
        # server's one owner (a local server: stdio, or HTTP without tokens)
        owner: str | None = None,
        # how this client can be asked to approve a step in this call (spec/runs.md,
        # "Approvals"); None: nobody is asked, a person runs `handrail runs approve`
        approver: Approver | None = None,
        # the protocol revision: negotiated by `initialize`, or carried by a 2026-07-28 request
        version: str | None = None,
        modern: bool = False,  # the request carries its own envelope (2026-07-28)
        # the client's capabilities, as it declared them (initialize, or the request's `_meta`)
        capabilities: Mapping[str, Any] = NO_CAPABILITIES,
        # the client's first MCP root that is a folder here: the default workspace of its runs
        workspace: str | None = None,
        # the scope of the token that names `owner` (`agent`, `person`, `both`); None: no
        # token. An `agent` token's answers never approve (spec/runs.md, "Who may approve")
        scope: str | None = None,
        # the agent session asking, which holds the branches it claims (spec/runs.md, "Claims
        # and leases"): one per stdio session, the Mcp-Session-Id header or the connection on
        # HTTP; None: the person themselves (the dashboard, `handrail runs`, the library)
        session: str | None = None,
        # the lease token the call presents (`lease` of workflow_continue, workflow_resume,
        # workflow_abandon): whoever presents a branch's live token is its holder, on any replica
        lease: str | None = None,
        # the JSON-RPC id of the message answered, as text (at most 128 characters): set only
        # when the server traces, for a span's `jsonrpc.request.id`
        message_id: str | None = None,
    ) -> None:
        self._fill(locals())


LOCAL = Request()  # the server's own person, asking through no client (the library, tests)
