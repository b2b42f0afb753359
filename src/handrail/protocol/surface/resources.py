"""Resources: a `workflow://<id>` per workflow (its source, as written) and
`workflow://schema`; the listing, reading, and the checks of a subscription's URI."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from handrail.model.codec import encode
from handrail.model.errors import INVALID_PARAMS, RESOURCE_NOT_FOUND, RpcError
from handrail.protocol.surface.completion import TEMPLATES
from handrail.protocol.surface.subscriptions import PREFIX, SCHEMA_URI
from handrail.service.core import Service

if TYPE_CHECKING:
    from handrail.catalog import Snapshot

SCHEMA = {
    "uri": SCHEMA_URI,
    "name": "schema",
    "title": "Workflow schema",
    "description": "The JSON Schema of workflow files",
    "mimeType": "application/schema+json",
}


def resources_list(service: Service) -> dict[str, Any]:
    snapshot = service.catalog.snapshot()
    resources = [
        {
            "uri": f"{PREFIX}{w.id}",
            "name": w.id,
            "title": w.name,
            "description": w.description,
            "mimeType": "application/json",
        }
        for w in (() if service.runs_only else snapshot.workflows)  # --runs-only: no reading ahead
    ]
    resources.append(dict(SCHEMA))
    return {"resources": resources}


def templates_list() -> dict[str, Any]:
    return {"resourceTemplates": list(TEMPLATES)}


def resources_read(
    service: Service, params: dict[str, Any], missing: int = RESOURCE_NOT_FOUND
) -> dict[str, Any]:
    """`missing`: the code for an unknown workflow, RESOURCE_NOT_FOUND in the handshake era and
    -32602 (Invalid params) from 2026-07-28 on."""
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise RpcError(
            INVALID_PARAMS,
            "Invalid params",
            {"details": "uri must be workflow://<id> or workflow://schema"},
        )
    if not uri.startswith(PREFIX):  # a URI we do not serve is a resource we do not have
        raise RpcError(missing, "Resource not found", {"uri": uri})
    name = uri[len(PREFIX) :]
    if name != "schema" and service.runs_only:
        from handrail.runs.handlers import refuse_in_runs_only  # lazy: with the first run call

        refuse_in_runs_only("workflow_get")  # a workflow's resource is its whole definition
    if name == "schema":
        text, mime = (
            encode(service.call("workflow_get_schema", {})).decode(),
            "application/schema+json",
        )
    else:
        snapshot = service.catalog.snapshot()
        if snapshot.get(name) is None:
            raise RpcError(missing, "Resource not found", {"uri": uri})
        text, mime = service.workflow(snapshot, name).document.decode(), "application/json"
    return {"contents": [{"uri": uri, "mimeType": mime, "text": text}]}


def subscribable(service: Service, uri: str) -> Snapshot:
    """The snapshot to subscribe to `uri` in; refused for a resource we do not have."""
    snapshot = service.catalog.snapshot()
    name = uri[len(PREFIX) :] if uri.startswith(PREFIX) else None
    if name is None or (name != "schema" and snapshot.get(name) is None):
        raise RpcError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})
    return snapshot
