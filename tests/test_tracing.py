"""Traces: a real `handrail serve` sends its spans to a tiny OTLP/HTTP receiver this test
starts (the protobuf decoded with opentelemetry-proto): a span per MCP request named and
attributed as OpenTelemetry's MCP conventions say, the client's `traceparent` continued,
child spans for checks, store writes and approvals; and none of it without OTEL_*."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.helpers.http import CLIENT_CAPABILITIES_KEY, HttpServer, envelope, modern_headers

pytestmark = pytest.mark.slow

FLOW = "traced"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
STEPS = [
    {
        "id": "notes",
        "title": "Notes",
        "prompt": "Write notes.md.",
        "requireConfirmation": True,
        "checks": [{"type": "file", "path": "notes.md", "message": "The notes are written"}],
    },
    {"id": "ship", "title": "Ship", "prompt": "Ship it."},
]


class Receiver:
    """An OTLP/HTTP endpoint on a free port, keeping every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        received = self.spans

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        for span in scope.spans:
                            received.append(_plain(span, self.path))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _plain(span: Any, path: str) -> dict[str, Any]:
    attributes = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        attributes[kv.key] = getattr(kv.value, kind) if kind else None
    return {
        "path": path,
        "name": span.name,
        "trace": span.trace_id.hex(),
        "id": span.span_id.hex(),
        "parent": span.parent_span_id.hex(),
        "kind": span.kind,
        "attributes": attributes,
        "error": span.status.code == 2,
    }


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    yield made
    made.close()


def _call(arguments: dict[str, Any], name: str = "workflow_continue", **params: Any) -> dict[str, Any]:
    meta = envelope(**{CLIENT_CAPABILITIES_KEY: {"elicitation": {}}})
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, **params, "_meta": meta},
    }


def test_spans_reach_an_otlp_receiver_with_mcp_names_attributes_and_parent_links(
    tmp_path: Path, receiver: Receiver
) -> None:
    flows = tmp_path / "flows"
    flows.mkdir()
    document = {"id": FLOW, "name": "Traced", "description": "Traces.", "version": "1.0.0", "steps": STEPS}
    (flows / f"{FLOW}.json").write_text(json.dumps(document))
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.md").write_text("notes")
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "50"}
    args = ("--no-bundled", "--workflows", str(flows), "--database", f"sqlite:///{tmp_path / 'runs.db'}")
    with HttpServer(*args, env=env) as http:
        traceparent = f"00-{TRACE_ID}-{CLIENT_SPAN}-01"
        started = http.rpc(
            "tools/call",
            {
                "name": "workflow_start",
                "arguments": {"workflowId": FLOW, "goal": "Traced", "workspace": str(workspace)},
                "_meta": {"traceparent": traceparent},
            },
        )
        run_id = started["result"]["structuredContent"]["runId"]
        step = {"runId": run_id, "stepId": "notes", "output": "Written."}
        asked = http.post(_call(step), modern_headers(_call(step))).json()["result"]
        assert asked["resultType"] == "input_required", asked
        retry = _call(
            step,
            inputResponses={"approval": {"action": "accept", "content": {"comment": "Fine"}}},
            requestState=asked["requestState"],
        )
        done = http.post(retry, modern_headers(retry)).json()["result"]
        assert done["structuredContent"]["accepted"] is True, done
        missing = http.rpc("tools/call", {"name": "workflow_continue", "arguments": {"runId": "nope"}})
        assert missing["result"]["isError"] is True
        assert http.rpc("tools/list", {})["result"]["tools"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and sum(s["name"] == "tools/list" for s in receiver.spans) < 1:
            time.sleep(0.05)
    spans = receiver.spans
    assert spans and {s["path"] for s in spans} == {"/v1/traces"}
    by_id = {s["id"]: s for s in spans}

    (start,) = [s for s in spans if s["name"] == "tools/call workflow_start"]
    assert start["trace"] == TRACE_ID and start["parent"] == CLIENT_SPAN  # the client's trace, continued
    assert start["kind"] == 2  # SERVER
    assert start["attributes"]["mcp.method.name"] == "tools/call"
    assert start["attributes"]["gen_ai.tool.name"] == "workflow_start"
    assert start["attributes"]["gen_ai.operation.name"] == "execute_tool"
    assert start["attributes"]["network.transport"] == "tcp"
    created = [s for s in spans if s["name"] == "create runs"]
    assert [by_id[s["parent"]]["name"] for s in created] == ["tools/call workflow_start"]
    assert created[0]["attributes"]["db.system.name"] == "sqlite"
    assert created[0]["attributes"]["handrail.run.id"] == run_id

    continues = [s for s in spans if s["name"] == "tools/call workflow_continue"]
    assert len(continues) == 3 and all(s["trace"] != TRACE_ID for s in continues)  # no traceparent sent
    assert sum(s["attributes"].get("mcp.protocol.version") == "2026-07-28" for s in continues) == 2
    (check,) = [s for s in spans if s["name"] == "check file"]
    assert check["attributes"]["handrail.check.passed"] is True
    assert by_id[check["parent"]]["name"] == "tools/call workflow_continue"
    (ask,) = [s for s in spans if s["name"] == "approval ask"]
    assert by_id[ask["parent"]]["name"] == "tools/call workflow_continue"
    (decide,) = [s for s in spans if s["name"] == "approval decide"]
    assert decide["attributes"]["handrail.approval.approved"] is True
    assert (
        decide["attributes"]["handrail.via"] == "input_required"
    )  # the channel the answer came through (2026-07-28)
    writes = [s for s in spans if s["name"] == "update runs"]
    assert writes and any(by_id.get(w["parent"]) is decide for w in writes)  # the decision's write
    failed = [s for s in continues if s["attributes"].get("error.type") == "tool_error"]
    assert len(failed) == 1 and failed[0]["error"]
    assert (
        next(s for s in spans if s["name"] == "tools/list")["attributes"]["mcp.method.name"] == "tools/list"
    )


def test_without_otel_variables_the_server_loads_no_opentelemetry(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.helpers.server import clean_env

    code = (
        "import sys\n"
        "from handrail.cli.serve import traced\n"
        "assert traced(None, 'tcp') is None\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    env = {k: v for k, v in clean_env(tmp_path).items() if not k.startswith("OTEL_")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_over_stdio_console_spans_go_to_stderr_and_stdout_carries_only_protocol_messages(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    from tests.helpers.server import clean_env

    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/list",
            "params": {"_meta": {"traceparent": f"00-{TRACE_ID}-{CLIENT_SPAN}-01"}},
        },
    ]
    env = clean_env(tmp_path) | {"OTEL_TRACES_EXPORTER": "console", "OTEL_BSP_SCHEDULE_DELAY": "50"}
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "start", "--no-bundled"],
        input="".join(json.dumps(line) + "\n" for line in lines),
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    replies = [json.loads(line) for line in done.stdout.splitlines()]  # every stdout line is JSON-RPC
    assert [r.get("id") for r in replies] == [1, 2] and all(r["jsonrpc"] == "2.0" for r in replies)
    assert '"name": "tools/list"' in done.stderr and TRACE_ID in done.stderr
    assert '"network.transport": "pipe"' in done.stderr
