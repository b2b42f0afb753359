"""`completion/complete`: workflow ids for the arguments that take one.

A prompt's argument named in `WORKFLOW_ARGUMENTS`, and the `id` of the resource
template `workflow://{id}`, complete to the ids of the workflows in service that
start with what the user typed (case-insensitively), then those that merely contain
it. At most `MAX_VALUES` values go out (the spec's limit); `total` counts them all.
"""

from __future__ import annotations

from typing import Any

MAX_VALUES = 100
WORKFLOW_TEMPLATE = "workflow://{id}"
WORKFLOW_ARGUMENTS = frozenset({"workflowId", "workflow", "id"})
TEMPLATES = (
    {
        "uriTemplate": WORKFLOW_TEMPLATE,
        "name": "workflow",
        "title": "A workflow by id",
        "description": "The definition of the workflow with that id",
        "mimeType": "application/json",
    },
)


class CompletionError(ValueError):
    """The request names no prompt or template we have, or is malformed: Invalid params."""


def complete(params: dict[str, Any], ids: list[str]) -> dict[str, Any]:
    """The `completion/complete` result for `params`, with `ids` the workflows in service."""
    ref, argument = params.get("ref"), params.get("argument")
    if not isinstance(ref, dict) or not isinstance(ref.get("type"), str):
        raise CompletionError("ref must be an object with a type")
    if not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
        raise CompletionError("argument must be an object with a name")
    value = argument.get("value", "")
    if not isinstance(value, str):
        raise CompletionError("argument.value must be a string")
    name = argument["name"]
    if ref["type"] == "ref/prompt":
        prompt = ref.get("name")
        if not isinstance(prompt, str):
            raise CompletionError("ref.name must be a string")
        if prompt not in ids:
            raise CompletionError(f"unknown prompt {prompt[:100]!r}")
        found = _matching(ids, value) if name in WORKFLOW_ARGUMENTS else []
    elif ref["type"] == "ref/resource":
        uri = ref.get("uri")
        if not isinstance(uri, str):
            raise CompletionError("ref.uri must be a string")
        if uri != WORKFLOW_TEMPLATE:
            raise CompletionError(
                f"unknown resource template {uri[:100]!r}; the only template is {WORKFLOW_TEMPLATE}"
            )
        found = _matching(ids, value) if name == "id" else []
    else:
        raise CompletionError(f"ref.type must be ref/prompt or ref/resource, not {ref['type'][:40]!r}")
    return {
        "completion": {
            "values": found[:MAX_VALUES],
            "total": len(found),
            "hasMore": len(found) > MAX_VALUES,
        }
    }


def _matching(ids: list[str], typed: str) -> list[str]:
    folded = typed.lower()
    starts = [i for i in ids if i.lower().startswith(folded)]
    inside = [i for i in ids if folded in i.lower() and not i.lower().startswith(folded)]
    return sorted(starts) + sorted(inside)
