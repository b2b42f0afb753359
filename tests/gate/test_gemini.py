"""Gemini CLI's names for MCP tools read as `server/tool`, whichever naming its release
writes: `mcp_SERVER_TOOL` (0.61, with `mcp_context`) or `mcp__SERVER__TOOL` (earlier)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from handrail.gate.gemini import mcp_target

NAMES = st.from_regex(r"[a-z][a-z0-9_\-]{0,12}[a-z0-9]", fullmatch=True)


def as_gemini_names_it(server: str, tool: str) -> str:
    """Gemini CLI 0.61's name of a server's tool (its generateValidName, read in its source)."""
    return "mcp_" + re.sub(r"[^a-zA-Z0-9_\-.:]", "_", f"{server}_{tool}")


@given(NAMES, NAMES)
def test_a_single_underscore_name_splits_where_the_server_name_says(server: str, tool: str) -> None:
    name = as_gemini_names_it(server, tool)
    assert mcp_target(name, {"server_name": server}) == f"{server}/{tool}"
    assert mcp_target(name, {"server_name": server, "tool_name": tool}) == f"{server}/{tool}"


def test_a_server_name_gemini_had_to_change_still_splits_the_tool_name() -> None:
    assert mcp_target("mcp_my_server_list_issues", {"server_name": "my server"}) == "my server/list_issues"


def test_without_mcp_context_the_server_ends_at_the_first_underscore() -> None:
    assert mcp_target("mcp_handrail_workflow_continue", {}) == "handrail/workflow_continue"


def test_the_double_underscore_naming_of_earlier_releases_still_reads() -> None:
    assert mcp_target("mcp__github__create_pull_request", {}) == "github/create_pull_request"
    assert mcp_target("mcp__handrail__workflow_continue", {"server_name": "handrail"}) == (
        "handrail/workflow_continue"
    )
