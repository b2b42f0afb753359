"""`resources/subscribe`: which resource URIs a client watches, and which of them a
new catalog snapshot changed. A workflow resource changed when its revision (a digest
of its file) did, or when it came or went; `workflow://schema` changes only with the
server, so a subscription to it never fires."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from handrail.catalog import Snapshot

PREFIX = "workflow://"
SCHEMA_URI = "workflow://schema"


def _revision(snapshot: Snapshot, uri: str) -> str | None:
    if uri == SCHEMA_URI:
        return "schema"
    workflow = snapshot.get(uri[len(PREFIX) :])
    return workflow.revision if workflow is not None else None


class Subscriptions:
    """Called from the transport's thread and from the catalog watcher's, hence the lock."""

    def __init__(self) -> None:
        self._seen: dict[str, str | None] = {}  # uri -> the revision the client last heard of
        self._lock = threading.Lock()

    def subscribe(self, uri: str, snapshot: Snapshot) -> None:
        with self._lock:
            if uri not in self._seen:
                self._seen[uri] = _revision(snapshot, uri)

    def unsubscribe(self, uri: str) -> None:
        with self._lock:
            self._seen.pop(uri, None)

    def updated(self, snapshot: Snapshot) -> list[str]:
        """The subscribed URIs whose resource differs in `snapshot` from what was last told."""
        changed = []
        with self._lock:
            for uri, seen in self._seen.items():
                now = _revision(snapshot, uri)
                if now != seen:
                    self._seen[uri] = now
                    changed.append(uri)
        return changed
