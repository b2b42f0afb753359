"""`portable` rewrites a schema without changing what it accepts."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft7Validator

from handrail.service.portable_schema import portable

VALUES: list[Any] = ["", "text", 0, 2.5, True, None, {}, {"id": 3}, {"id": "a"}, [], [1, "x"]]


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": ["string", "null"]}, {"anyOf": [{"type": "string"}, {"type": "null"}]}),
        ({"type": ["integer"]}, {"type": "integer"}),
        ({}, {"anyOf": [{"type": t} for t in ("string", "number", "boolean", "object", "array", "null")]}),
        (
            {"type": "object", "properties": {"a": {}, "b": {"type": ["array", "object"]}}},
            {
                "type": "object",
                "properties": {
                    "a": portable({}),
                    "b": {"anyOf": [{"type": "array"}, {"type": "object"}]},
                },
            },
        ),
    ],
)
def test_type_lists_and_empty_schemas_become_alternatives_of_one_type(
    schema: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert portable(schema) == expected


@pytest.mark.parametrize(
    "schema",
    [
        {"type": ["string", "null"]},
        {"type": ["object", "string"], "properties": {"id": {"type": "string"}}, "minLength": 2},
        {"type": ["object", "null"], "anyOf": [{"required": ["id"]}, {"type": "null"}]},
        {"type": "array", "items": {}},
        {"type": "array", "items": [{}, {"type": ["string", "number"]}]},
        {"not": {}},
        {"definitions": {"d": {"type": ["number", "boolean"]}}, "$ref": "#/definitions/d"},
    ],
)
def test_the_rewritten_schema_accepts_exactly_what_the_original_does(schema: dict[str, Any]) -> None:
    original, rewritten = Draft7Validator(schema), Draft7Validator(portable(schema))
    assert [original.is_valid(v) for v in VALUES] == [rewritten.is_valid(v) for v in VALUES]


def test_the_schema_given_is_left_as_it_was() -> None:
    schema = {"type": ["string", "null"], "properties": {"a": {}}}
    portable(schema)
    assert schema == {"type": ["string", "null"], "properties": {"a": {}}}
