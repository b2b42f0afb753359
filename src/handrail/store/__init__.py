"""The run store: where runs and their event logs live.

`RunStore` is the interface the run layer talks to; `open_store(url)` picks an
implementation from a database URL (sqlite:/// or postgresql://).

The names below load on first use: a gate hook opens one store on every tool call
and loads nothing else of the package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

    from handrail.home import handrail_home
    from handrail.model.runs import ACTIVE_STATUSES, STATUSES, Event, NewEvent, RunRecord, RunUpdate
    from handrail.store.base import Conflict, RunStore
    from handrail.store.open import default_url, open_store

_PUBLIC = {
    "ACTIVE_STATUSES": "handrail.model.runs",
    "STATUSES": "handrail.model.runs",
    "Conflict": "handrail.store.base",
    "Event": "handrail.model.runs",
    "NewEvent": "handrail.model.runs",
    "RunRecord": "handrail.model.runs",
    "RunStore": "handrail.store.base",
    "RunUpdate": "handrail.model.runs",
    "default_url": "handrail.store.open",
    "handrail_home": "handrail.home",
    "open_store": "handrail.store.open",
}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        from importlib import import_module  # lazy: a hook's start-up

        return getattr(import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'handrail.store' has no attribute {name!r}")


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
