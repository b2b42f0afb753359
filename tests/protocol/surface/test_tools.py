"""A tool's result as MCP sends it: bytes put together by hand, spliced into the reply
(the 2026 revision splices its stamps after them); they must be the JSON of the MCP
shape, byte for byte."""

from __future__ import annotations

import json
from typing import Any

import pytest

from handrail.model.codec import Encoded, encode
from handrail.protocol.surface.tool_methods import tool_result
from tests.helpers.server import Server

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "result",
    [
        {"valid": True, "issues": [], "suggestions": []},
        {"text": 'quotes " and \\ backslashes, a\nnewline, \u00e9 and \U0001f600', "n": 2**40},
        Encoded(b'{"already":"encoded","list":[1,2,3]}'),
    ],
)
def test_a_spliced_tool_result_is_the_same_bytes_as_the_encoded_dict(result: Any) -> None:
    value = result.value() if isinstance(result, Encoded) else result
    shape = {
        "content": [{"type": "text", "text": encode(value).decode()}],
        "structuredContent": value,
        "isError": False,
    }
    assert tool_result(result).data == encode(shape)


def test_a_tools_call_answer_carries_the_result_twice_over_stdio() -> None:
    with Server() as server:  # the bundled workflows: a clone alone passes
        server.initialize()
        answer = server.request(
            "tools/call",
            {
                "name": "workflow_validate",
                "arguments": {"workflowId": "coding-task", "stepId": "understand", "output": "x"},
            },
        )
    result = answer["result"]
    assert result["isError"] is False
    assert result["content"][0]["type"] == "text"
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert set(result["structuredContent"]) == {"valid", "issues", "suggestions"}
