"""The protocol revisions handrail speaks, and the reserved `_meta` keys of the
2026-07-28 revision, whose requests carry their version and the client's
capabilities in `params._meta` (the envelope) instead of a handshake."""

from __future__ import annotations

import re
from typing import Any

from handrail.model.version import __version__

KNOWN_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")  # the handshake era
LATEST = KNOWN_VERSIONS[-1]
MODERN_VERSIONS = ("2026-07-28",)  # per-request envelope, no handshake
ALL_VERSIONS = KNOWN_VERSIONS + MODERN_VERSIONS
DATE = re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$")
SERVER_INFO = {
    "name": "workflowlookup",  # the seeds' name, which clients have configured
    "title": "handrail",  # what clients show
    "version": __version__,
    "description": "handrail: step-by-step workflows for AI agents",
}

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"


def envelope(message: dict[str, Any]) -> dict[str, Any] | None:
    """The 2026-07-28 `_meta` envelope of a request, or None when it is a handshake-era one.
    `initialize` never is: that revision has no handshake, whatever the request carries."""
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    if isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta and message.get("method") != "initialize":
        return meta
    return None


def negotiate(requested: str) -> str | None:
    if requested in KNOWN_VERSIONS:
        return requested
    if DATE.match(requested) and requested > LATEST:
        return LATEST
    return None
