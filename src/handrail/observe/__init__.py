"""Metrics, traces and logs: the `Observer` the working layers tell, one null object
when nothing observes, and OpenTelemetry's spans (the otel extra)."""
