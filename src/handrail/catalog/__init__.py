"""Where workflows come from, and keeping them current while the server runs.

Sources, in increasing precedence: the bundled set, the user folders, the project
folder, the environment's paths, then every --workflows path (sources.py). Each file
is listed cheaply and compiled on first use (files.py, live.py).

The catalog is an immutable Snapshot (snapshot.py), swapped whole; a request never
sees half a reload. A file that breaks keeps its last good version in service, and
the break is reported beside it.
"""

from __future__ import annotations

from pathlib import Path

from handrail._resources import resource
from handrail.catalog.files import Listed
from handrail.catalog.live import Catalog
from handrail.catalog.snapshot import BrokenWorkflow, Entry, Problem, Snapshot
from handrail.catalog.sources import Source, default_sources, discover
from handrail.model.limits import MAX_FILE_BYTES as DEFAULT_MAX_BYTES

__all__ = [
    "BrokenWorkflow",
    "Catalog",
    "Entry",
    "Listed",
    "Problem",
    "Snapshot",
    "Source",
    "default_sources",
    "discover",
    "load_catalog",
]


def load_catalog(*paths: str | Path, bundled: bool = True, max_bytes: int = DEFAULT_MAX_BYTES) -> Catalog:
    """A catalog of exactly the given files and folders (and the bundled set unless
    bundled=False): the library entry point, free of user and environment sources."""
    sources = [Source("bundled", resource("workflows"))] if bundled else []
    sources += [Source("cli", Path(p)) for p in paths]
    catalog = Catalog(sources, max_bytes=max_bytes)
    catalog.reload()
    return catalog
