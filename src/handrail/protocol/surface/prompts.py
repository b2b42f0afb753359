"""Prompts: one per workflow, whose text tells the model how to follow it (with
--runs-only, how to follow it as a run)."""

from __future__ import annotations

from typing import Any

from handrail.catalog.suggest import close_matches
from handrail.model.errors import INVALID_PARAMS, RpcError
from handrail.protocol.surface.texts import prompt_text
from handrail.service.core import Service

_MISSING = object()


def prompts_list(service: Service) -> dict[str, Any]:
    snapshot = service.catalog.snapshot()
    return {
        "prompts": [{"name": w.id, "title": w.name, "description": w.description} for w in snapshot.workflows]
    }


def prompts_get(service: Service, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name", _MISSING)
    if not isinstance(name, str):
        details = "name is required" if name is _MISSING else "name must be a string"
        raise RpcError(INVALID_PARAMS, "Invalid params", {"details": details})
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params", {"details": "arguments must be an object"})
    snapshot = service.catalog.snapshot()
    workflow = snapshot.get(name)
    if workflow is None:
        data: dict[str, Any] = {"details": f"unknown prompt {name[:100]!r}"}
        close = close_matches(name, snapshot.entries)
        if close:
            data["didYouMean"] = close
        raise RpcError(INVALID_PARAMS, "Invalid params", data)
    return {
        "description": workflow.description,
        "messages": [{"role": "user", "content": {"type": "text", "text": _text(service, workflow)}}],
    }


def _text(service: Service, workflow: Any) -> str:
    if service.runs_only:  # the classic stepping tools are off: follow it as a run
        from handrail.runs.handlers import run_prompt_text  # lazy: with the first run call

        return run_prompt_text(workflow)
    return prompt_text(workflow)
