"""`tools/list` and `tools/call`: the service's tools as MCP offers them. A call's
answer goes out twice, as structuredContent and as the text of a text block, both
spliced in from the one encoding the service made (`tool_result`); a HandrailError becomes a result
with `isError` and the fix text a model can act on. Approvals (spec/runs.md) ask the
person through the client (protocol/surface/approvals.py): at once (elicitation/create,
stdio) or on a retry (2026-07-28 `input_required`, a result the run operations return)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from handrail.model.codec import Encoded, encode
from handrail.model.errors import INVALID_PARAMS, HandrailError, RpcError
from handrail.model.request import Request
from handrail.protocol.session import Session
from handrail.protocol.surface.texts import fix_text
from handrail.service.core import Service

if TYPE_CHECKING:
    from handrail.protocol.surface.approvals import Ask, Opened

_MISSING = object()


def tools_list(service: Service) -> dict[str, Any]:
    return {"tools": list(service.published_tools())}


def tools_call(service: Service, request: Request, params: dict[str, Any], session: Session) -> Any:
    """A successful call's result as bytes ready to splice into the reply (see
    `tool_result`); a tool's error as a result with `isError`; a question for the
    person (2026-07-28) as an `input_required` result."""
    name = params.get("name", _MISSING)
    if not isinstance(name, str) or not Service.knows(name):
        # never echo a non-string name: it may be huge, or nested past repr's limit
        details = (
            "name is required"
            if name is _MISSING
            else "name must be a string"
            if not isinstance(name, str)
            else f"unknown tool `{repr(name[:100])[1:-1]}`"
        )
        data: dict[str, Any] = {"details": details, "tools": list(_tool_names())}
        if isinstance(name, str):
            from difflib import get_close_matches  # lazy: loaded only when a call needs it, after start-up

            close = get_close_matches(name[:100], data["tools"], n=1, cutoff=0.85)
            if close:  # the message then ends "; did you mean `workflow_next`?"
                data["didYouMean"] = close
        raise RpcError(INVALID_PARAMS, "Invalid params", data)
    arguments = params.get("arguments", {})
    _say_completed(service, session)
    if name == "workflow_continue":
        # lazy: the approvals' values load with the first call that may ask for one, not
        # with `initialize` (a run tool's call costs a store's write: this import is nothing)
        from handrail.protocol.surface.approvals import approver_for

        approver = approver_for(request, params, _ask(session), _opened(session))
        if approver is not None:
            request = request._replace(approver=approver)
    try:
        result = service.answer(name, request, arguments)
    except HandrailError as exc:
        return error_result(name, exc)
    if isinstance(result, Encoded):
        return tool_result(result)
    # else InputRequired: the client asks the person, then calls again
    from handrail.protocol.surface.approvals import input_required  # lazy: as approver_for

    return input_required(result)


def tool_result(result: Any) -> Encoded:
    """A tool's answer as MCP sends it: the JSON once as structuredContent and once as the
    text of a text block (for clients that do not read structuredContent), put together
    as bytes: the answer is encoded once and escaped into a string once."""
    encoded = result if isinstance(result, Encoded) else Encoded(encode(result))
    return Encoded(
        b'{"content":[{"type":"text","text":'
        + encoded.quoted()
        + b'}],"structuredContent":'
        + encoded.data
        + b',"isError":false}'
    )


def error_result(name: str, exc: HandrailError) -> dict[str, Any]:
    error = {"code": exc.code, "message": exc.message, "data": exc.data}
    return {
        "content": [{"type": "text", "text": fix_text(name, exc)}],
        "structuredContent": error,
        "isError": True,
    }


def _ask(session: Session) -> Ask | None:
    """A request to the client waited for (elicitation), when the session has a channel
    back to it while a request is answered (stdio)."""
    requests = session.client_requests
    return requests.ask if not session.stateless and requests.sender is not None else None


def _opened(session: Session) -> Opened | None:
    """Keeps each URL-mode question sent, when the session can later say it is complete."""
    if session.stateless:
        return None

    def opened(elicitation: str, run_id: str, seq: int) -> None:
        session.url_questions[elicitation] = (run_id, seq)

    return opened


def _say_completed(service: Service, session: Session) -> None:
    """`notifications/elicitation/complete` for each URL-mode question a person has since
    decided on (on the dashboard, or by `handrail runs approve` in another process): said
    when the client next calls a tool, before that call's answer."""
    if not session.url_questions or session.sink is None:
        return
    from handrail.protocol.surface.approvals import completed  # lazy: only once a URL was opened

    for elicitation, (run_id, seq) in list(session.url_questions.items()):
        if service.runs.awaiting.settled(run_id, seq):
            del session.url_questions[elicitation]
            session.sink(encode(completed(elicitation)))


def _tool_names() -> tuple[str, ...]:
    from handrail.service.definitions import tool_names  # lazy: after start-up

    return tool_names()
