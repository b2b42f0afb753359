"""What a run is as the store keeps it (its record, its events, the words of its statuses
and event types), named here for the layers above runs: they read runs through this
layer, never the store."""

from handrail.store.base import (
    ACTIVE_STATUSES,
    STATUSES,
    Event,
    EventType,
    RunRecord,
    RunStatus,
)

__all__ = ["ACTIVE_STATUSES", "STATUSES", "Event", "EventType", "RunRecord", "RunStatus"]
