"""The run store: where runs and their event logs live.

`RunStore` is the interface the run layer talks to; `open_store(url)` picks an
implementation from a database URL (sqlite:/// or postgresql://).
"""

from __future__ import annotations

from handrail.home import handrail_home
from handrail.store.base import (
    ACTIVE_STATUSES,
    STATUSES,
    Conflict,
    Event,
    NewEvent,
    RunRecord,
    RunStore,
    RunUpdate,
)
from handrail.store.open import default_url, open_store

__all__ = [
    "ACTIVE_STATUSES",
    "STATUSES",
    "Conflict",
    "Event",
    "NewEvent",
    "RunRecord",
    "RunStore",
    "RunUpdate",
    "default_url",
    "handrail_home",
    "open_store",
]
