"""Waiting for workflow files to change, on the file system's own events (watchfiles).

Polling 10,000 files twice a second kept a core busy; events cost nothing while
nothing changes. The catalog rescans on each batch of events (a rescan compiles
only what changed) and keeps its last-good-version rule; see handrail.catalog.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from handrail.internals import rust_notify

WAKE_MS = 1000  # with no event, wake this often: a new source folder, a file still settling


def roots(paths: Iterable[Path]) -> tuple[str, ...]:
    """The folders to watch for these sources: a folder itself, a file's folder (a file
    replaced by renaming is seen there), nothing for a source that does not exist yet."""
    found: set[str] = set()
    for path in paths:
        if os.path.isdir(path):  # follows links; False for a link loop
            found.add(str(path))
        elif os.path.isfile(path):
            found.add(str(path.parent))
    return tuple(sorted(found))


def changes(folders: tuple[str, ...], stop: threading.Event, *, debounce_ms: int) -> Iterator[bool | None]:
    """None once the folders are watched (look at them then: nothing changed since is
    missed), then True after each batch of changes under `folders` (gathered for up to
    `debounce_ms`), False every WAKE_MS without any; end when `stop` is set. Raises what
    watchfiles raises (a folder that disappears, too many watches)."""
    if not folders:
        yield None
        while not stop.wait(WAKE_MS / 1000):
            yield False
        return
    RustNotify = rust_notify()  # watchfiles.watch, less its filtering

    with RustNotify(list(folders), False, False, 300, True, True) as watcher:
        yield None
        while True:
            raw = watcher.watch(max(debounce_ms, 50), 50, WAKE_MS, stop)
            if raw == "timeout":
                yield False
            elif raw in ("stop", "signal"):
                return
            else:
                yield True
