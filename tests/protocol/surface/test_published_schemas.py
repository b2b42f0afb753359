"""Every input and output schema `tools/list` publishes is portable JSON Schema: no type
lists and no empty schemas (strict clients, such as the MCP Inspector's `--strict`
mode, warn on both), valid against the JSON Schema metaschemas, and a tool the
official SDK's types accept. Asked of a real `handrail start`, on the handshake and on
the 2026-07-28 revision, serving every tool and with --runs-only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import mcp.types as types
import pytest
from jsonschema import Draft7Validator, Draft202012Validator
from mcp_types.methods import parse_server_result

from handrail.service.definitions import workflow_schema
from handrail.service.portable_schema import portable
from tests.helpers.http import MODERN, modern_request
from tests.helpers.server import LATEST, ROOT, Server

pytestmark = pytest.mark.slow

ONE_SCHEMA = ("items", "additionalItems", "additionalProperties", "not", "if", "then", "else",
              "contains", "propertyNames")  # fmt: skip
SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
NAMED_SCHEMAS = ("properties", "patternProperties", "definitions", "$defs", "dependentSchemas")


def not_portable(schema: Any, where: str) -> Iterator[str]:
    """Each place in `schema` with a type list or an empty schema, as a JSON pointer."""
    if schema == {}:
        yield f"{where}: an empty schema"
        return
    if not isinstance(schema, dict):
        return
    if isinstance(schema.get("type"), list):
        yield f"{where}/type: a list of types {schema['type']}"
    for key, value in schema.items():
        if key in ONE_SCHEMA and isinstance(value, dict):
            yield from not_portable(value, f"{where}/{key}")
        elif key in SCHEMA_LISTS or (key == "items" and isinstance(value, list)):
            for i, item in enumerate(value):
                yield from not_portable(item, f"{where}/{key}/{i}")
        elif key in NAMED_SCHEMAS:
            for name, item in value.items():
                yield from not_portable(item, f"{where}/{key}/{name}")


def listed_tools(version: str, *args: str) -> list[dict[str, Any]]:
    with Server(*args) as server:  # the bundled workflows: a clone alone passes
        if version == MODERN:
            message = modern_request("tools/list", rid=server.new_id())
            server.send(message)
            result = server.response(message["id"])["result"]
            parse_server_result("tools/list", MODERN, result)
        else:
            server.initialize(version)
            result = server.result("tools/list")
    listed: list[dict[str, Any]] = result["tools"]
    return listed


SERVERS = {
    "handshake": (LATEST, ()),
    "handshake-runs-only": (LATEST, ("--runs-only",)),
    "2026": (MODERN, ()),
    "2026-runs-only": (MODERN, ("--runs-only",)),
}


@pytest.fixture(scope="module", params=list(SERVERS.values()), ids=list(SERVERS))
def published(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    version, args = request.param
    return listed_tools(version, *args)


def test_no_published_schema_has_a_type_list_or_an_empty_schema(published: list[dict[str, Any]]) -> None:
    found = [
        problem
        for tool in published
        for key in ("inputSchema", "outputSchema")
        if key in tool
        for problem in not_portable(tool[key], f"{tool['name']}.{key}")
    ]
    assert found == []


def test_every_published_schema_is_valid_json_schema(published: list[dict[str, Any]]) -> None:
    for tool in published:
        for key in ("inputSchema", "outputSchema"):
            Draft7Validator.check_schema(tool[key])
            Draft202012Validator.check_schema(tool[key])


def test_the_sdk_types_accept_every_published_tool(published: list[dict[str, Any]]) -> None:
    names = [types.Tool.model_validate(tool).name for tool in published]
    assert len(names) == len(published) >= 5
    assert all(tool["outputSchema"]["type"] == "object" for tool in published)


def test_the_portable_workflow_schema_judges_every_bundled_workflow_as_the_original_does() -> None:
    original = Draft7Validator(workflow_schema())
    rewritten = Draft7Validator(portable(workflow_schema()))
    documents: list[Any] = []
    for path in sorted((ROOT / "workflows").glob("*.json")):
        document = json.loads(path.read_text("utf-8"))
        documents.append(document)
        step = document["steps"][0]
        # and broken copies: each part a type list or an empty schema described, given a wrong type
        documents += [
            {**document, "steps": [{**step, "runCondition": 3}]},
            {**document, "steps": [{**step, "requireConfirmation": 1.5}]},
            {**document, "steps": [{**step, "runCondition": {"var": "x", "equals": [1, {"a": None}]}}]},
            {**document, "steps": [{**step, "validationCriteria": "text"}]},
        ]
    verdicts = [(original.is_valid(d), rewritten.is_valid(d)) for d in documents]
    assert all(a == b for a, b in verdicts)
    assert {a for a, _ in verdicts} == {True, False}  # both verdicts were tried
