"""Which compiled workflow a run follows: the version it started on, always.

A run stores the content hash of its workflow's source (`Workflow.content_hash`, made
by the compiler). While the catalog serves that same source, its compiled workflow is
used; once the file changes (or breaks, or goes), the stored source is compiled again
and kept in a small LRU cache.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

from handrail.internals import Lock  # threading's, without loading threading
from handrail.model.errors import StorageError

if TYPE_CHECKING:
    from handrail.model.workflow import Workflow
    from handrail.store import RunStore

PINNED_CACHE_SIZE = 32


class Pins:
    def __init__(self, size: int = PINNED_CACHE_SIZE) -> None:
        self._size = size
        self._compiled: OrderedDict[str, Workflow] = OrderedDict()  # content hash -> its workflow
        self._lock = Lock()

    def workflow(self, source_hash: str, current: Workflow | None, store: RunStore) -> Workflow:
        """The run's pinned workflow: `current` (the catalog's) when it is the same source."""
        if current is not None and current.content_hash == source_hash:
            return current
        with self._lock:
            cached = self._compiled.get(source_hash)
            if cached is not None:
                self._compiled.move_to_end(source_hash)
                return cached
        document = store.get_source(source_hash)
        if document is None:
            raise StorageError(
                f"the run's workflow source {source_hash[:12]} is missing from the run database",
                {"sourceHash": source_hash},
            )
        from handrail.compiler import compile_text  # lazy: on the first compile

        # runs start only from the catalog, i.e. from a source the user configured: the
        # recompiled workflow keeps that origin, so its command checks still run
        compiled = compile_text(document, f"<pinned {source_hash[:12]}>", origin="source")
        if compiled.workflow is None:  # it compiled when the run started: a newer handrail refuses it
            raise StorageError(
                "the run's pinned workflow no longer compiles: "
                + "; ".join(d.message for d in compiled.errors[:3]),
                {"sourceHash": source_hash},
            )
        with self._lock:
            self._compiled[source_hash] = compiled.workflow
            while len(self._compiled) > self._size:
                self._compiled.popitem(last=False)
        return compiled.workflow
