"""`tools/list` and `tools/call`: the service's tools as MCP offers them. A call's
answer goes out twice, as structuredContent and as the text of a text block, both
spliced in from the one encoding the service made (`tool_result`); a HandrailError becomes a result
with `isError` and the fix text a model can act on. Approvals (spec/runs.md) ask the
person through the client: at once (elicitation/create, stdio) or on a retry
(2026-07-28 `input_required`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from handrail.codec import Encoded, encode
from handrail.errors import INVALID_PARAMS, HandrailError, RpcError
from handrail.protocol.revisions import modern_capabilities
from handrail.protocol.surface.texts import fix_text
from handrail.service.core import Service

if TYPE_CHECKING:
    from handrail.protocol.client_requests import ClientRequests

ELICITATION_TIMEOUT_S = 600.0  # how long a person has to answer an approval asked through the client
_MISSING = object()


def tools_list(service: Service) -> dict[str, Any]:
    return {"tools": list(service.published_tools())}


def tools_call(
    service: Service,
    params: dict[str, Any],
    *,
    stateless: bool,
    client_capabilities: dict[str, Any],
    client_requests: ClientRequests,
) -> dict[str, Any] | Encoded:
    """A successful call's result comes as bytes, spliced into the reply as they are."""
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
            from difflib import get_close_matches

            close = get_close_matches(name[:100], data["tools"], n=1, cutoff=0.85)
            if close:  # the message then ends "; did you mean `workflow_next`?"
                data["didYouMean"] = close
        raise RpcError(INVALID_PARAMS, "Invalid params", data)
    arguments = params.get("arguments", {})
    approver = (
        _approver(params, stateless, client_capabilities, client_requests)
        if name == "workflow_continue"
        else None
    )
    try:
        if approver is None:
            result = service.answer(name, arguments)
        else:
            from handrail.runs.approvals import REQUEST_APPROVER, InputRequired

            token = REQUEST_APPROVER.set(approver)
            try:
                result = service.answer(name, arguments)
            except InputRequired as asked:  # 2026-07-28: the client asks the person, then retries
                return asked.result()
            finally:
                REQUEST_APPROVER.reset(token)
    except HandrailError as exc:
        return error_result(name, exc)
    return tool_result(result)


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


def _approver(
    params: dict[str, Any],
    stateless: bool,
    client_capabilities: dict[str, Any],
    client_requests: ClientRequests,
) -> Any:
    """How this client can be asked to approve a step (spec/runs.md, "Approvals"), or None."""
    from handrail.runs.approvals import AnsweredOnRetry, AskedNow, local_person
    from handrail.runs.core import REQUEST_OWNER

    person = REQUEST_OWNER.get() or local_person()
    capabilities = modern_capabilities(params)
    if capabilities is not None:
        if "elicitation" in capabilities:
            return AnsweredOnRetry(params.get("inputResponses"), params.get("requestState"), person)
        return None
    if stateless or "elicitation" not in client_capabilities:
        return None
    if client_requests.sender is None:
        return None
    return AskedNow(client_requests.ask, person, ELICITATION_TIMEOUT_S)


def _tool_names() -> tuple[str, ...]:
    from handrail.service.definitions import tool_names

    return tool_names()
