"""Run by tests/test_isolation.py as a pytest session of its own, under a tester's
environment that names a filled handrail home (`PROBE_TESTERS_HOME`): servers
started by fixtures of every scope, and the test itself, see none of it.

Not collected with the suite (its name is no test module's); it is a probe only.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.http import HttpServer
from tests.helpers.server import Server

TESTERS_HOME = Path(os.environ["PROBE_TESTERS_HOME"])
SAMPLE = "my-first-workflow"  # what `handrail init` writes into the tester's home


def listed(server: Server) -> set[str]:
    return {w["id"] for w in server.result("workflow_list")["workflows"]}


@pytest.fixture(scope="module")
def module_server() -> Iterator[Server]:
    with Server() as server:
        server.initialize()
        yield server


@pytest.fixture(scope="module")
def module_http() -> Iterator[HttpServer]:
    with HttpServer() as server:
        yield server


def test_a_module_scoped_stdio_server_lists_none_of_the_testers_workflows(module_server: Server) -> None:
    assert SAMPLE not in listed(module_server)


def test_a_module_scoped_http_server_lists_none_of_the_testers_workflows(module_http: HttpServer) -> None:
    reply = module_http.rpc("tools/call", {"name": "workflow_list", "arguments": {}})
    assert SAMPLE not in str(reply) and "result" in reply, reply


def test_a_test_scoped_server_lists_none_of_the_testers_workflows() -> None:
    with Server() as server:
        server.initialize()
        assert SAMPLE not in listed(server)


def test_the_test_itself_sees_none_of_the_testers_variables() -> None:
    assert not {k: v for k, v in os.environ.items() if str(TESTERS_HOME) in v and not k.startswith("PROBE_")}
    assert "the-testers-token" not in os.environ.values()
