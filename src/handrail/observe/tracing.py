"""OpenTelemetry traces of the server's work (the `handrail[otel]` extra): a span per MCP
request named and attributed as the OpenTelemetry semantic conventions for MCP say
(`{mcp.method.name} {target}`, `mcp.method.name`, `gen_ai.tool.name`, ...), continuing
the client's trace when its `params._meta` carries `traceparent`; child spans for
checks, store writes and approvals.

Off unless the environment configures it the standard way (settings.Settings.otel_traces:
OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_TRACES_EXPORTER);
This module imports opentelemetry; the command imports it only when traces are asked for,
so a server without them loads none of it.
The SDK reads its other OTEL_* variables itself (service name, headers, sampling).
"""

from __future__ import annotations

import atexit
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.trace import Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from handrail.model.version import __version__
from handrail.observe.observer import Span, Tracer


class OtelTracer:
    """A `Tracer` over an OpenTelemetry tracer and the W3C trace-context propagator."""

    def __init__(self, otel: trace.Tracer, transport: str) -> None:
        self.otel = otel
        self.propagator = TraceContextTextMapPropagator()
        self.transport = transport  # network.transport: "pipe" (stdio) or "tcp" (HTTP)

    @contextmanager
    def request(
        self,
        method: str,
        tool: str,
        meta: Mapping[str, Any] | None,
        request_id: str | None = None,
        session_id: str | None = None,
    ) -> Iterator[Span]:
        parent = None
        if isinstance(meta, Mapping) and isinstance(meta.get("traceparent"), str):
            carrier = {k: v for k in ("traceparent", "tracestate") if isinstance(v := meta.get(k), str)}
            parent = self.propagator.extract(carrier)
        attributes: dict[str, str] = {"mcp.method.name": method, "network.transport": self.transport}
        if request_id is not None:
            attributes["jsonrpc.request.id"] = request_id
        if session_id is not None:
            attributes["mcp.session.id"] = session_id
        if tool:
            attributes["gen_ai.tool.name"] = tool
            attributes["gen_ai.operation.name"] = "execute_tool"
        name = f"{method} {tool}" if tool else method
        with self.otel.start_as_current_span(
            name, context=parent, kind=trace.SpanKind.SERVER, attributes=attributes, record_exception=False
        ) as span:
            yield _OtelSpan(span)

    @contextmanager
    def span(self, name: str, **attributes: str | int | float | bool) -> Iterator[Span]:
        with self.otel.start_as_current_span(name, attributes=attributes, record_exception=False) as span:
            yield _OtelSpan(span)

    def finished(self, name: str, start_ns: int, end_ns: int, **attributes: str | int | float | bool) -> None:
        span = self.otel.start_span(name, start_time=start_ns, attributes=attributes)
        if attributes.get("handrail.check.passed") is False:
            span.set_status(Status(StatusCode.ERROR))
        span.end(end_time=end_ns)


class _OtelSpan:
    def __init__(self, span: Any) -> None:
        self._span = span

    def set(self, key: str, value: str | int | float | bool) -> None:
        self._span.set_attribute(key, value)
        if key == "error.type":
            self._span.set_status(Status(StatusCode.ERROR))


def tracer(exporter: str, transport: str, shutdown_timeout: float) -> Tracer:
    """The server's tracer for OTEL_TRACES_EXPORTER `exporter` ("otlp": OTLP over HTTP,
    "console": stderr, never stdout, which carries the protocol). The spans still queued
    at exit are flushed for at most `shutdown_timeout` seconds (`--shutdown-timeout`),
    whatever the collector does: a collector that accepts and never answers must not
    hold a stopping server."""
    # the SDK's own exit hook waits as long as the exporter's retries take: ours is bounded
    provider = TracerProvider(
        resource=Resource.create({"service.name": "handrail", "service.version": __version__}),
        shutdown_on_exit=False,
    )
    # OTLPSpanExporter's endpoint, headers and timeout come from OTEL_EXPORTER_OTLP_*
    chosen: SpanExporter = (
        ConsoleSpanExporter(out=sys.stderr) if exporter == "console" else OTLPSpanExporter()
    )
    provider.add_span_processor(BatchSpanProcessor(chosen))
    atexit.register(shut_down_within, provider, shutdown_timeout)
    return OtelTracer(provider.get_tracer("handrail"), transport)


def shut_down_within(provider: TracerProvider, seconds: float) -> bool:
    """Flush and shut `provider` down on a daemon thread, waiting at most `seconds`; True
    when it finished. A thread left blocked on the collector dies with the process."""
    done = threading.Thread(target=provider.shutdown, name="handrail-trace-flush", daemon=True)
    done.start()
    done.join(seconds)
    return not done.is_alive()
