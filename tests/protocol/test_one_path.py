"""One path for a message: one handler table, and the protocol's parts point one way."""

from __future__ import annotations

import ast
from pathlib import Path

from handrail.catalog import load_catalog
from handrail.protocol.core import Protocol
from handrail.service.core import Service

PROTOCOL = Path(__file__).resolve().parents[2] / "src" / "handrail" / "protocol"


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_the_mcp_surface_never_imports_the_protocol_core_that_registers_it() -> None:
    for path in (PROTOCOL / "surface").glob("*.py"):
        assert "handrail.protocol.core" not in _imports(path), path.name


def test_the_protocol_stops_checks_through_the_service_not_through_loaded_modules() -> None:
    assert "sys.modules" not in (PROTOCOL / "core.py").read_text("utf-8")


def test_a_tool_answers_alike_as_a_direct_method_and_through_tools_call() -> None:
    protocol = Protocol(Service(load_catalog(bundled=True)))
    protocol.handle(
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":'
        b'{"protocolVersion":"2025-06-18","capabilities":{}}}'
    )
    direct = protocol.handle(b'{"jsonrpc":"2.0","id":1,"method":"workflow_list","params":{}}')
    called = protocol.handle(
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"workflow_list","arguments":{}}}'
    )
    assert direct is not None and called is not None
    listing = direct[len(b'{"jsonrpc":"2.0","id":1,"result":') : -1]
    assert b'"structuredContent":' + listing + b',"isError":false' in called
