"""Traces: a real `handrail serve` sends its spans to a tiny OTLP/HTTP receiver this test
starts (the protobuf decoded with opentelemetry-proto): a span per MCP request named and
attributed as OpenTelemetry's MCP conventions say, the client's `traceparent` continued,
child spans for checks, store writes and approvals; and none of it without OTEL_*."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
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
    assert start["attributes"]["jsonrpc.request.id"] == "1"
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


class Silent:
    """A TCP endpoint that accepts every connection and never answers (a hung collector)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                self.held.append(self.sock.accept()[0])

    def close(self) -> None:
        self.sock.close()
        for held in self.held:
            held.close()


def test_sigterm_stops_the_server_within_its_shutdown_timeout_while_the_collector_never_answers(
    tmp_path: Path,
) -> None:
    silent = Silent()
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": silent.url,
        "OTEL_EXPORTER_OTLP_TIMEOUT": "30",  # the exporter alone would wait 30 s and retry
        "OTEL_BSP_SCHEDULE_DELAY": "60000",  # the spans wait in the queue for the exit flush
    }
    args = ("--no-bundled", "--database", f"sqlite:///{tmp_path / 'runs.db'}", "--shutdown-timeout", "1")
    try:
        with HttpServer(*args, env=env) as http:
            assert http.rpc("tools/list", {})["result"]["tools"] is not None
            http.proc.terminate()
            try:
                code = http.proc.wait(1 + 4)  # the timeout, and the interpreter's own start and exit
            except subprocess.TimeoutExpired:
                pytest.fail(f"still running past --shutdown-timeout 1:\n{http.stderr}")
            assert code == 0, http.stderr
        assert silent.held, "the exit flush never reached the collector"
    finally:
        silent.close()


def test_without_otel_variables_the_server_loads_no_opentelemetry(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.helpers.server import clean_env

    code = (
        "import sys\n"
        "from handrail.cli.serve import traced\n"
        "assert traced('tcp', 5.0) is None\n"
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
    assert '"jsonrpc.request.id": "2"' in done.stderr
    sessions = set(re.findall(r'"mcp.session.id": "(stdio:[0-9a-f]{16})"', done.stderr))
    assert len(sessions) == 1  # both requests, one connection


def _memory_tracer(transport: str) -> tuple[Any, Any]:
    """An OtelTracer whose spans land in an in-memory exporter, as they end."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from handrail.observe.tracing import OtelTracer

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OtelTracer(provider.get_tracer("test"), transport), exporter


def _stdio_session(tracer: Any, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One client session through the real stdio loop (in a thread: it owns no signals)."""
    import io

    from handrail.catalog import load_catalog
    from handrail.protocol.core import Protocol
    from handrail.service.core import Service
    from handrail.transport import stdio

    protocol = Protocol(Service(load_catalog(bundled=True)), tracer=tracer)
    sent = io.BytesIO(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    received = io.BytesIO()
    received.close = lambda: None  # type: ignore[method-assign]  # read after the loop ends
    thread = threading.Thread(target=stdio.serve, args=(protocol, sent, received))
    thread.start()
    thread.join(30)
    assert not thread.is_alive()
    return [json.loads(line) for line in received.getvalue().splitlines()]


def _initialize(rid: Any) -> dict[str, Any]:
    params = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params}


def test_over_stdio_each_request_span_names_its_json_rpc_id_and_the_connection_s_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setattr(sys, "stdout", sys.stdout)  # the stdio loop points it at stderr
    tracer, exporter = _memory_tracer("pipe")
    long_id = "r" * 1000
    first = [
        _initialize(1),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "list-7", "method": "tools/call", "params": {"name": "workflow_list"}},
        {"jsonrpc": "2.0", "id": long_id, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
    ]
    replies = _stdio_session(tracer, first)
    assert [r["id"] for r in replies] == [1, "list-7", long_id, None]
    spans = exporter.get_finished_spans()
    by_name = {span.name: span.attributes for span in spans}
    assert by_name["initialize"]["jsonrpc.request.id"] == "1"  # a number's id, as a string
    assert by_name["tools/call workflow_list"]["jsonrpc.request.id"] == "list-7"
    assert by_name["tools/list"]["jsonrpc.request.id"] == "r" * 128  # the client's text, bounded
    assert replies[-1]["error"]["code"] == -32600 and "ping" not in by_name  # a null id: refused, untraced
    sessions = {span.attributes["mcp.session.id"] for span in spans}
    assert len(sessions) == 1 and re.fullmatch(r"stdio:[0-9a-f]{16}", next(iter(sessions)))

    exporter.clear()
    _stdio_session(tracer, [_initialize(1), {"jsonrpc": "2.0", "method": "notifications/initialized"}])
    (again,) = exporter.get_finished_spans()
    assert again.attributes["mcp.session.id"] not in sessions  # another connection, another session


def test_over_http_each_request_span_names_its_json_rpc_id_and_no_session(tmp_path: Path) -> None:
    import httpx
    import uvicorn

    from handrail.catalog import load_catalog
    from handrail.service.core import Service
    from handrail.transport.http import HttpSettings, bind, create_app
    from handrail.transport.security import LOCAL_HOSTS

    tracer, exporter = _memory_tracer("tcp")
    app = create_app(
        Service(load_catalog(bundled=True)), HttpSettings(allowed_hosts=set(LOCAL_HOSTS), tracer=tracer)
    )
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    headers = {"Accept": "application/json, text/event-stream"}
    try:
        with httpx.Client(timeout=15) as client:
            deadline = time.monotonic() + 15
            while not server.started and time.monotonic() < deadline:
                time.sleep(0.02)
            asked = [
                _initialize("init-1"),
                {"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"name": "workflow_list"}},
                {
                    "jsonrpc": "2.0",
                    "id": 43,
                    "method": "tools/call",
                    "params": {"name": "workflow_list", "_meta": envelope()},
                },
            ]
            for message in asked:
                sent = headers | (modern_headers(message) if "_meta" in message["params"] else {})
                reply = client.post(url, json=message, headers=sent).json()
                assert reply["id"] == message["id"] and "result" in reply, reply
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()
    spans = exporter.get_finished_spans()
    ids = sorted(str(span.attributes.get("jsonrpc.request.id")) for span in spans)
    assert ids == ["42", "43", "init-1"]
    assert all(span.attributes["network.transport"] == "tcp" for span in spans)
    # stateless HTTP issues no Mcp-Session-Id: its requests belong to no session
    assert not any("mcp.session.id" in span.attributes for span in spans)
