"""The tools are declared once (service/definitions.py, service/run_definitions.py):
the published list, the handlers and the README's table of tools are all made from
those declarations, so none of them can drift from the others."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from handrail.catalog import load_catalog
from handrail.service.core import Service
from handrail.service.definitions import RUNS_ONLY_TOOLS, TABLE, docs_table, tool_names, tools
from handrail.service.run_definitions import RUN_TOOLS
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text("utf-8")
# the table under "What an agent sees": its rows up to the first line that is not one
TABLE_IN_README = re.compile(
    r"^## What an agent sees\n.*?\n\n(\| tool \|.*?\n)(?!\|)", re.MULTILINE | re.DOTALL
)


def test_the_readme_shows_the_table_made_from_the_declarations() -> None:
    shown = TABLE_IN_README.search(README)
    assert shown is not None, "README.md lost its table of tools"
    assert shown.group(1) == docs_table(), "run `python -m handrail.service.definitions` and paste its table"


def test_the_readme_table_has_a_row_for_each_published_tool() -> None:
    rows = re.findall(r"^\| `(workflow_\w+)` \|", docs_table(), re.MULTILINE)
    assert rows == [t["name"] for t in tools()]


def test_each_tool_is_declared_once() -> None:
    names = [t.name for t in TABLE]
    assert len(names) == len(set(names))
    assert tool_names() == tuple(names)


def test_every_declared_handler_answers_its_tool() -> None:
    service = Service(load_catalog())
    try:
        for tool in TABLE:
            handlers = service._run_handlers if tool.runs else service._handlers
            assert callable(handlers[tool.name]), tool.name
        assert set(service._handlers) | set(service._run_handlers) == set(tool_names())
    finally:
        service.close()


def test_runs_only_offers_the_listing_and_the_run_tools() -> None:
    assert {"workflow_list", *(t.name for t in RUN_TOOLS)} == RUNS_ONLY_TOOLS
    assert all(t.runs for t in RUN_TOOLS)


@pytest.mark.parametrize("published", tools(), ids=lambda t: t["name"])
def test_a_published_tool_requires_only_arguments_it_names(published: dict[str, object]) -> None:
    schema = published["inputSchema"]
    assert isinstance(schema, dict)
    assert set(schema["required"]) <= set(schema["properties"])
    assert schema["additionalProperties"] is False


@pytest.mark.parametrize("published", tools(), ids=lambda t: t["name"])
def test_a_published_example_calls_its_own_tool(published: dict[str, object]) -> None:
    examples = published["examples"]
    assert isinstance(examples, dict)
    assert examples["request"]["method"] == published["name"]


def test_the_published_list_is_the_one_recorded(snapshot: Any) -> None:
    # what tools/list sends, key order included: a change to it is made on purpose
    # (pytest --snapshot-update) and shows in review
    assert json.dumps(tools(), indent=1, ensure_ascii=False) == snapshot
