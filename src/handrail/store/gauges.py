"""The store's figures a metrics scrape reads: how many runs stand in each status, how
long the oldest approval has waited, and what driven agents spent. Each is one
aggregate (a handful of rows back), through `aggregate`: the first two over the runs
table, whatever the number of runs; the spending over the `usage` events, through the
index that holds those alone."""

from __future__ import annotations

from datetime import UTC, datetime

from handrail.model.runs import RunStatus
from handrail.store.base import RunStore
from handrail.store.stats_sql import DIALECT


def runs_by_status(store: RunStore) -> dict[str, int]:
    """Every status, with 0 for those no run stands in."""
    counts = {status.value: 0 for status in RunStatus}
    for status, count in store.aggregate("SELECT status, COUNT(*) FROM runs GROUP BY status", ()):
        counts[str(status)] = int(count)
    return counts


def oldest_waiting_seconds(store: RunStore, now: datetime | None = None) -> float:
    """How long the run awaiting approval the longest has waited (0 when none waits)."""
    mark = "?" if store.dialect == "sqlite" else "%s"
    rows = store.aggregate(
        f"SELECT MIN(updated_at) FROM runs WHERE status = {mark}", (RunStatus.AWAITING_APPROVAL.value,)
    )
    oldest = rows[0][0] if rows else None
    if not oldest:
        return 0.0
    since = datetime.fromisoformat(str(oldest).replace("Z", "+00:00"))
    if since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    return max(0.0, ((now or datetime.now(UTC)) - since).total_seconds())


def usage_by_step(store: RunStore) -> list[tuple[str, str, str, int, int, float]]:
    """Per workflow, version and step, what the agents `handrail drive` started spent,
    from the `usage` events: (workflow, version, step, input tokens, output tokens, cost
    in USD)."""
    number = DIALECT[store.dialect]["number"]
    given = {
        k: f"SUM(COALESCE({number('ev.data', k)}, 0))" for k in ("inputTokens", "outputTokens", "costUsd")
    }
    rows = store.aggregate(
        f"SELECT r.workflow_id, r.workflow_version, ev.step_id, {given['inputTokens']}, "
        f"{given['outputTokens']}, {given['costUsd']} FROM run_events ev JOIN runs r ON r.id = ev.run_id "
        "WHERE ev.type = 'usage' AND ev.step_id IS NOT NULL "
        "GROUP BY r.workflow_id, r.workflow_version, ev.step_id",
        (),
    )
    return [(str(wf), str(v), str(step), int(i), int(o), float(c)) for wf, v, step, i, o, c in rows]
