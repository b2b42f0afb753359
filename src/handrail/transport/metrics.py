"""`handrail serve --metrics`: the server's figures in the Prometheus text format, at
/metrics, through the prometheus_client library.

`Metrics` is the `Observer` (handrail/observe/observer.py) the protocol and the run ledger are
given as they are built (the command line makes it first): it counts requests, checks
and store retries as they happen. What a database or the catalog already knows (runs
by status, approvals waiting, workflows and broken files) is read at scrape time by
`_Collector`, with one aggregate query each, so a scrape costs the same whatever the
number of runs. Each app has its own registry: two
servers (or tests) in one process never share a count.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from handrail.service.core import Service
from handrail.store.gauges import oldest_waiting_seconds, runs_by_status, usage_by_step

log = logging.getLogger("handrail.transport.metrics")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# a quick tool answers in a millisecond or two; a check may run a test suite for minutes
REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
CHECK_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600)


class Metrics:
    """The counters, the histograms and the scrape-time figures of one server."""

    def __init__(self, service: Callable[[], Service]) -> None:
        """`service()`: the service whose store and catalog a scrape reads. A callable, so
        that the metrics are made first and given to the runs as they are built."""
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "handrail_requests",
            "MCP requests answered, by method, tool and outcome (ok, tool_error, error)",
            ["method", "tool", "outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "handrail_request_duration_seconds",
            "Time to answer an MCP request, by method and tool",
            ["method", "tool"],
            buckets=REQUEST_BUCKETS,
            registry=self.registry,
        )
        self.checks = Counter(
            "handrail_checks",
            "Checks the server ran, by kind (command, file, git) and outcome (passed, failed)",
            ["kind", "outcome"],
            registry=self.registry,
        )
        self.check_duration = Histogram(
            "handrail_check_duration_seconds",
            "Time a check took, by kind",
            ["kind"],
            buckets=CHECK_BUCKETS,
            registry=self.registry,
        )
        self.retries = Counter(
            "handrail_store_retries",
            "Run writes tried again because another writer moved the run meanwhile",
            registry=self.registry,
        )
        self.errors = Counter(
            "handrail_store_errors",
            "Run writes that failed with a database error",
            registry=self.registry,
        )
        self.registry.register(_Collector(service))
        self._children: dict[tuple[str, str, str], tuple[Counter, Histogram]] = {}

    def request(self, method: str, tool: str, outcome: str, seconds: float) -> None:
        key = (method, tool, outcome)
        pair = self._children.get(key)
        if pair is None:  # labels() takes a lock and builds a tuple: once per label set
            pair = self._children[key] = (
                self.requests.labels(method, tool, outcome),
                self.latency.labels(method, tool),
            )
        pair[0].inc()
        pair[1].observe(seconds)

    def check(self, kind: str, outcome: str, seconds: float) -> None:
        self.checks.labels(kind, outcome).inc()
        self.check_duration.labels(kind).observe(seconds)

    def store_retry(self) -> None:
        self.retries.inc()

    def store_error(self) -> None:
        self.errors.inc()

    def exposition(self) -> bytes:
        """The Prometheus text format of every figure, as a scrape receives it."""
        return generate_latest(self.registry)


class _Collector(Collector):
    """The figures read at scrape time: the store's and the catalog's."""

    def __init__(self, service: Callable[[], Service]) -> None:
        self.service = service

    def describe(self) -> list[Metric]:
        return []  # names known only at collect time are fine: nothing else registers them

    def collect(self) -> Iterator[Metric]:
        yield from self._catalog()
        yield from self._runs()

    def _catalog(self) -> Iterator[Metric]:
        snapshot = self.service().catalog.ready  # never waits for a first listing
        workflows = GaugeMetricFamily("handrail_catalog_workflows", "Workflows in service")
        broken = GaugeMetricFamily("handrail_catalog_broken_files", "Workflow files refused or broken")
        workflows.add_metric([], len(snapshot.entries) if snapshot is not None else 0)
        broken.add_metric([], len(snapshot.found) if snapshot is not None else 0)
        yield workflows
        yield broken

    def _runs(self) -> Iterator[Metric]:
        ledger = self.service().runs.ledger
        runs = GaugeMetricFamily("handrail_runs", "Runs in the store, by status", labels=["status"])
        waiting = GaugeMetricFamily("handrail_approvals_waiting", "Runs waiting for a person's approval")
        age = GaugeMetricFamily(
            "handrail_approval_oldest_wait_seconds", "How long the oldest waiting approval has waited"
        )
        counts: dict[str, int] = {}
        oldest = 0.0
        spent: list[tuple[str, str, str, int, int, float]] = []
        # a server that has written no run has no database yet: a scrape does not make one
        if ledger.settings.database_file is None or os.path.exists(ledger.settings.database_file):
            try:
                counts = runs_by_status(ledger.store)
                oldest = oldest_waiting_seconds(ledger.store)
                spent = usage_by_step(ledger.store)
            except Exception as exc:  # a store that cannot answer must not fail the scrape
                log.warning("metrics: the run store did not answer: %s", exc)
                up = GaugeMetricFamily("handrail_store_up", "1 when the run store answered the scrape")
                up.add_metric([], 0)
                yield up
                return
        for status, count in counts.items():
            runs.add_metric([status], count)
        waiting.add_metric([], counts.get("awaiting_approval", 0))
        age.add_metric([], oldest)
        up = GaugeMetricFamily("handrail_store_up", "1 when the run store answered the scrape")
        up.add_metric([], 1)
        yield runs
        yield waiting
        yield age
        yield up
        yield from _spent(spent)


def _spent(rows: list[tuple[str, str, str, int, int, float]]) -> Iterator[Metric]:
    """What driven agents spent (their `usage` events), as counters: the log only grows."""
    tokens = CounterMetricFamily(
        "handrail_agent_tokens",
        "Tokens the agents `handrail drive` started used, by workflow, version, step and kind "
        "(input, output)",
        labels=["workflow", "version", "step", "kind"],
    )
    cost = CounterMetricFamily(
        "handrail_agent_cost_usd",
        "What the agents `handrail drive` started cost, as their harness reported it (or --price), by "
        "workflow, version and step",
        labels=["workflow", "version", "step"],
    )
    for workflow, version, step, tokens_in, tokens_out, usd in rows:
        tokens.add_metric([workflow, version, step, "input"], tokens_in)
        tokens.add_metric([workflow, version, step, "output"], tokens_out)
        cost.add_metric([workflow, version, step], usd)
    yield tokens
    yield cost
