"""The store's figures a metrics scrape reads: how many runs stand in each status, and
how long the oldest approval has waited. Each is one aggregate over the runs table
(a handful of rows back, whatever the number of runs), through `aggregate`."""

from __future__ import annotations

from datetime import UTC, datetime

from handrail.store.base import RunStatus, RunStore


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
