"""`maxReplyBytes` (--max-reply) bounds every tool's result as JSON. The result is
encoded once, and that encoding is what is measured: a result over the limit is
refused with the same error whether it was built (the schema) or kept as JSON (a
workflow's source), by the seed's direct method and by tools/call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.server import Server

pytestmark = pytest.mark.slow

LIMIT = 2000


def _workflow(wid: str, steps: int) -> dict[str, Any]:
    return {
        "id": wid,
        "name": f"Workflow {wid}",
        "description": f"The {wid} workflow.",
        "version": "1.0.0",
        "steps": [{"id": f"step-{i}", "title": f"Step {i}", "prompt": "Do it."} for i in range(steps)],
    }


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("workflows")
    (folder / "small.json").write_text(json.dumps(_workflow("small", 2)), encoding="utf-8")
    (folder / "large.json").write_text(json.dumps(_workflow("large", 60), indent=2), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def server(sources: Path) -> Iterator[Server]:
    with Server("--no-bundled", "--workflows", str(sources), "--max-reply", str(LIMIT)) as s:
        s.initialize()
        yield s


def _over_the_reply_limit(data: dict[str, Any]) -> int:
    """The size the error names, after checking it names the limit."""
    assert data["limit"] == "maxReplyBytes" and data["value"] == LIMIT
    prefix, suffix = "the reply would be at least ", f" bytes, over the limit of {LIMIT}"
    assert data["details"].startswith(prefix) and data["details"].endswith(suffix), data
    return int(data["details"][len(prefix) : -len(suffix)])


def test_a_workflow_source_over_the_reply_limit_is_refused_naming_its_size(
    server: Server, sources: Path
) -> None:
    reply = server.request("workflow_get", {"id": "large"})
    assert reply["error"]["code"] == -32000, reply
    source = json.loads((sources / "large.json").read_bytes())
    compact = json.dumps(source, separators=(",", ":"), ensure_ascii=False).encode()
    assert _over_the_reply_limit(reply["error"]["data"]) == len(compact)  # what workflow_get sends
    assert "result" in server.request("workflow_get", {"id": "small"})


def test_a_built_result_over_the_reply_limit_is_refused_at_its_size_as_compact_json(server: Server) -> None:
    reply = server.request("workflow_get_schema", {})
    assert reply["error"]["code"] == -32000, reply
    size = _over_the_reply_limit(reply["error"]["data"])
    with Server("--no-bundled") as unbounded:
        unbounded.initialize()
        schema = unbounded.result("workflow_get_schema", {})
    assert size == len(json.dumps(schema, separators=(",", ":"), ensure_ascii=False).encode())


def test_over_the_reply_limit_through_tools_call_is_a_tool_error_a_model_can_read(server: Server) -> None:
    result = server.call("workflow_get", {"id": "large"})
    assert result["isError"] is True
    assert result["structuredContent"]["code"] == -32000
    _over_the_reply_limit(result["structuredContent"]["data"])
    assert f"over the limit of {LIMIT}" in result["content"][0]["text"]
    small = server.call("workflow_get", {"id": "small"})
    assert small["isError"] is False
    assert json.loads(small["content"][0]["text"]) == small["structuredContent"]
