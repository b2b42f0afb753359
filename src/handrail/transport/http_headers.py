"""What MCP's HTTP binding says about headers and statuses: whether an Accept
admits JSON, whether a 2026-07-28 request's routing headers (MCP-Protocol-Version,
Mcp-Method, Mcp-Name) agree with its body, and the HTTP status of a reply."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from starlette.datastructures import Headers

from handrail.model.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from handrail.protocol.revisions import PROTOCOL_VERSION_KEY

# The HTTP status of a 2026-07-28 request's JSON-RPC error; any other code is 200.
ERROR_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}
NAME_BEARING = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
ROUTING_HEADERS = ("mcp-protocol-version", "mcp-method", "mcp-name")
_BASE64_HEADER = re.compile(r"^=\?base64\?(.*)\?=$")


def accepts_json(accept: str | None) -> bool:
    """Whether an Accept header admits application/json (no header admits anything)."""
    if accept is None or not accept.strip():
        return True
    for item in accept.split(","):
        media, _, parameters = item.partition(";")
        if media.strip().lower() in ("application/json", "application/*", "*/*"):
            quality = re.search(r"(?:^|;)\s*q\s*=\s*([0-9.]+)", parameters)
            if quality is None or _positive(quality.group(1)):
                return True
    return False


def _positive(text: str) -> bool:
    try:
        return float(text) > 0
    except ValueError:
        return True


def _decode_header(value: str | None) -> str | None:
    """An Mcp-Name value, unwrapping the `=?base64?...?=` form clients use for
    values that are not plain printable ASCII; None when the wrapping is broken."""
    if value is None:
        return None
    wrapped = _BASE64_HEADER.match(value)
    if wrapped is None:
        return value
    try:
        return base64.b64decode(wrapped.group(1), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def header_mismatch(message: dict[str, Any], meta: dict[str, Any], headers: Headers) -> str | None:
    """Why a 2026-07-28 request's routing headers disagree with its body, or None."""
    for name in ROUTING_HEADERS:
        if len(headers.getlist(name)) > 1:
            return f"the {name} header appears more than once"
    if headers.get("mcp-protocol-version") != meta[PROTOCOL_VERSION_KEY]:
        return f"the MCP-Protocol-Version header does not match _meta {PROTOCOL_VERSION_KEY}"
    method = message.get("method")
    if headers.get("mcp-method") != method:
        return "the Mcp-Method header does not match the request's method"
    key = NAME_BEARING.get(method) if isinstance(method, str) else None
    if key is not None:
        value = message["params"].get(key)
        if value is not None and _decode_header(headers.get("mcp-name")) != value:
            return f"the Mcp-Name header does not match the request's {key}"
    return None


def status_of(reply: Any, modern: bool) -> int:
    """200 for results. A handshake-era error is 200 too, unless the message itself was
    unusable (no id to answer: parse error, invalid request); a 2026 error goes by code."""
    if not isinstance(reply, dict) or "error" not in reply:
        return 200
    code = reply["error"].get("code")
    if modern:
        return ERROR_STATUS.get(code, 200)
    return 400 if reply.get("id") is None and code in (PARSE_ERROR, INVALID_REQUEST) else 200
