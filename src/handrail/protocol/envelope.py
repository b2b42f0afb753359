"""The 2026-07-28 revision's envelope: the request a message's `_meta` makes (its
protocol version and the client's capabilities, checked), and the stamp every result
of that era carries (`resultType`, the cache hints, serverInfo)."""

from __future__ import annotations

from typing import Any

from handrail.model.codec import Encoded, encode
from handrail.model.errors import INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION, RpcError
from handrail.model.request import Request
from handrail.protocol.revisions import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO,
    SERVER_INFO_KEY,
)

# How long (ms) a 2026-07-28 client may reuse a result, and whether shared caches may.
# The tool list changes only with the server's version; what the workflow catalog
# feeds changes when a workflow file does (the catalog looks twice a second), and a
# private deployment's workflows are nobody else's business.
STATIC_TTL_MS = 300_000
CATALOG_TTL_MS = 5_000
CACHE_HINTS: dict[str, tuple[int, str]] = {
    "server/discover": (CATALOG_TTL_MS, "private"),
    "tools/list": (STATIC_TTL_MS, "public"),
    "resources/templates/list": (STATIC_TTL_MS, "public"),
    "resources/list": (CATALOG_TTL_MS, "private"),
    "resources/read": (CATALOG_TTL_MS, "private"),
    "prompts/list": (CATALOG_TTL_MS, "private"),
}
_SERVER_STAMP = {SERVER_INFO_KEY: SERVER_INFO}  # `_meta` of every 2026 result (encoded, never mutated)
_STAMP_TAIL = b',"resultType":"complete","_meta":' + encode(_SERVER_STAMP) + b"}"


def enveloped(request: Request, meta: dict[str, Any]) -> Request:
    """The request a 2026-07-28 message makes of `request`, its envelope checked."""
    if CLIENT_CAPABILITIES_KEY not in meta:
        raise _bad_envelope(f"_meta is missing {CLIENT_CAPABILITIES_KEY}")
    requested = meta[PROTOCOL_VERSION_KEY]
    if not isinstance(requested, str):
        raise _bad_envelope(f"_meta {PROTOCOL_VERSION_KEY} must be a string")
    if requested not in MODERN_VERSIONS:
        raise RpcError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": list(MODERN_VERSIONS), "requested": requested},
        )
    capabilities = meta[CLIENT_CAPABILITIES_KEY]
    if not isinstance(capabilities, dict):
        raise _bad_envelope(f"_meta {CLIENT_CAPABILITIES_KEY} must be an object")
    info = meta.get(CLIENT_INFO_KEY)
    if info is not None and not isinstance(info, dict):
        raise _bad_envelope(f"_meta {CLIENT_INFO_KEY} must be an object")
    return request._replace(version=requested, modern=True, capabilities=capabilities)


def stamped(method: str, result: Any) -> Any:
    """A 2026 result: `resultType`, the cache hints where the method has them, serverInfo.
    A tool's result, already encoded, is stamped as bytes (the same bytes the dict would
    encode to: no hints for tools/call)."""
    if type(result) is Encoded:
        data = result.data
        tail = _STAMP_TAIL if data.strip() != b"{}" else _STAMP_TAIL[1:]
        return Encoded(data[: data.rindex(b"}")] + tail)
    result.setdefault("resultType", "complete")  # or input_required (an approval)
    hint = CACHE_HINTS.get(method)
    if hint is not None:
        result["ttlMs"], result["cacheScope"] = hint
    result["_meta"] = _SERVER_STAMP
    return result


def _bad_envelope(details: str) -> RpcError:
    return RpcError(INVALID_PARAMS, "Invalid params", {"details": details})
