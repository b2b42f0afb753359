"""The catalog: lists the sources' files, keeps the listing current while the server runs,
and compiles each workflow when it is first asked for.

Listing a file costs a JSON parse; compiling it into its step graph happens on first
use and the result is kept in a bounded LRU cache (a compiled workflow is immutable and
deterministic from the file's bytes, so compiling it again after eviction is safe). A
server checks every file in the background after its first answer; a one-shot catalog
(`handrail list`, the library's `load_catalog`) checks every file before it answers.
A file that breaks keeps its last good version in service (kept compressed, so that
it can be compiled again), and the break is reported beside it.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from handrail.catalog.files import Kept, Listed, Read, Stamp, compile_file, listed, of_workflow, read, stamp
from handrail.catalog.snapshot import Snapshot, assemble
from handrail.catalog.sources import Source, discover
from handrail.model.errors import Diagnostic
from handrail.model.limits import MAX_COMPILED_WORKFLOWS, RELOAD_INTERVAL_S
from handrail.model.limits import MAX_FILE_BYTES as DEFAULT_MAX_BYTES
from handrail.observe.logs import Log
from handrail.patterns.caching import BoundedCache

if TYPE_CHECKING:
    from handrail.compiler import Compiled
    from handrail.model.workflow import Workflow

log = Log("handrail.catalog")  # logging loads with the first record

# A file changed this recently may change again without its stamp changing (timestamps
# are coarse); its stamp is not trusted, so it is read again at the next look.
RACY_NS = 2_000_000_000
_UNSETTLED = (-1, -1, -1, -1)
RAW_KEPT_BYTES = 4 << 20  # of a server's first listing, kept uncompressed until checked (Kept)
WATCH_ATTEMPTS = 3  # failures to watch the folders (e.g. out of inotify watches) before polling them
Verdict = tuple[str, "Compiled | None"]  # (revision, None if it compiled, else the broken compile)


class Catalog:
    """Lists the sources, and lists again what changed at most every `interval` seconds.
    `lazy`: leave checking every file to a background pass (set by `watch` and `summaries`,
    i.e. by a server); otherwise each file is compiled as it is listed. (A plain class,
    not a dataclass: its generated methods cost a server's start-up, and a catalog is
    never compared nor copied.)"""

    def __init__(
        self,
        sources: list[Source],
        max_bytes: int = DEFAULT_MAX_BYTES,
        interval: float = RELOAD_INTERVAL_S,
        max_compiled: int = MAX_COMPILED_WORKFLOWS,
        lazy: bool = False,
        quiet: bool = False,  # log no problems: the command prints them itself (`handrail list`)
        deferred: bool = False,  # `handrail start`: its first listing's problems are logged by `watch`
    ) -> None:
        self.sources, self.max_bytes = sources, max_bytes
        self.interval, self.max_compiled = interval, max_compiled
        self.lazy, self.quiet = lazy, quiet
        self._snapshot: Snapshot | None = None
        self._stamps: dict[Path, Stamp] = {}
        self._listed: dict[Path, Listed | Compiled] = {}  # Compiled: broken at reading
        self._digests: dict[Path, str | None] = {}  # revision of the bytes last read
        self._verdicts: dict[Path, Verdict] = {}
        self._last_good: dict[Path, tuple[Listed, bytes]] = {}  # and its zlib'd bytes
        # the bytes of a listed file not compiled yet (Kept); they leave only once their
        # verdict (and last good version) is recorded, so a request always finds one
        self._unchecked: dict[Path, Kept] = {}
        self._raw_left = RAW_KEPT_BYTES  # what the first listing may still keep uncompressed
        self._last_origin: dict[Path, Mapping[str, Any]] = {}  # of a git file's last good
        # what a server's first listing could not list without the compiler (not JSON, fields
        # missing): compiled by the checker or the first request after `initialize` (_settle)
        self._pending: dict[Path, Read | Diagnostic] = {}
        self._unsettled = False  # files are pending; False only once a snapshot lists them all
        self._cache: BoundedCache[tuple[Path, str], Workflow] = BoundedCache(max_compiled)
        # the listed file last loaded and its workflow: the one a session asks for again and
        # again, told by identity, without the cache's lock and key (one more workflow kept)
        self._last_loaded: tuple[Listed, Workflow] | None = None
        self._checked_at = 0.0
        self._lock = threading.Lock()  # one refresh at a time
        self._state = threading.Lock()  # verdicts, from any thread
        self._reassemble = False  # a verdict changed what the snapshot reports
        self._generation = 0
        self._refused: tuple[tuple[str, str], ...] = ()
        self._watcher: threading.Thread | None = None
        self._logged = -1
        self._deferred = deferred  # serving: problems are logged by the watcher, not on the start-up path
        self._stop, self._ready, self._wake_checker = threading.Event(), threading.Event(), threading.Event()
        self._listeners: list[Callable[[Snapshot], None]] = []

    def watch(self, interval: float | None = None) -> None:
        """List the sources, then keep them current, on a daemon thread woken by the file system's
        events (catalog/watch.py), so that a request only reads the current snapshot; and check
        every file on a second one. `interval`: how long changes are gathered before a reload.
        Returns at once; `snapshot()` waits for the first listing."""
        if self._watcher is not None:
            return
        if interval is not None:
            self.interval = interval
        self._deferred = self.lazy = True
        self._log_problems()  # of a first listing made already (`deferred`)
        for source in self.sources:
            if source.git is not None:
                source.git.start(self._stop, on_change=self._look)
        self._watcher = threading.Thread(target=self._watch, name="handrail-watch", daemon=True)
        self._watcher.start()
        self._wake_checker.set()
        threading.Thread(target=self._check_all, name="handrail-check", daemon=True).start()

    @property
    def ready(self) -> Snapshot | None:
        """The current snapshot if there is one yet; never reads a file."""
        return self._snapshot

    def summaries(self) -> list[Workflow | Listed]:
        """The workflows as `initialize` lists them: the first snapshot, listed without
        compiling anything (the files are checked in the background once serving)."""
        self.lazy = True
        return self._current().workflows

    def on_change(self, listener: Callable[[Snapshot], None]) -> None:
        """Call `listener(snapshot)` (from the watcher thread) whenever a new snapshot appears."""
        self._listeners.append(listener)

    def close(self) -> None:
        self._stop.set()
        self._ready.set()
        self._wake_checker.set()

    def _log_problems(self) -> None:
        """Log each new snapshot's problems once. The server does this from the watcher
        thread, off the start-up path: explaining a broken file imports jsonschema."""
        snapshot = self._snapshot
        if self.quiet or snapshot is None or snapshot.generation == self._logged:
            return
        self._logged = snapshot.generation
        for problem in snapshot.problems:  # errors, and the warning about a missing source
            log.warning("%s", problem.render())
        for entry in snapshot.entries.values():
            if entry.stale:
                log.warning("%s is broken; still serving its last good version", entry.item.file)

    def _watch(self) -> None:
        from handrail.catalog import watch  # lazy: the watcher loads only for a server that watches

        failures = 0
        while not self._stop.is_set():
            folders = watch.roots(source.path for source in self.sources)
            try:
                for changed in watch.changes(folders, self._stop, debounce_ms=int(self.interval * 1000)):
                    if changed is not False or _UNSETTLED in self._stamps.values():
                        self._look()
                    if watch.roots(source.path for source in self.sources) != folders:
                        break  # a source appeared or went: watch the new set
            except Exception as exc:  # the watcher must outlive any one bad folder
                failures += 1
                if failures < WATCH_ATTEMPTS:
                    log.warning("watching %s failed (%s); looking again", ", ".join(folders), exc)
                    self._stop.wait(max(self.interval, 0.5))
                    self._look()
                    continue
                log.warning(
                    "watching %s keeps failing (%s); looking every %gs instead",
                    ", ".join(folders),
                    exc,
                    max(self.interval, 1.0),
                )
                while not self._stop.wait(max(self.interval, 1.0)):  # events are out of reach: poll
                    self._look()

    def _check_all(self) -> None:
        """Compile every listed file not yet checked (after the first listing, and again
        whenever woken), so that broken ones are reported; keeps none of the workflows."""
        while not self._stop.is_set():
            self._wake_checker.wait()
            self._wake_checker.clear()
            if self._snapshot is None:  # listed by `summaries` already, or soon by the watcher
                self._ready.wait()
            if self._unsettled:
                self._look(settle=True)
            try:
                for path, item in list(self._listed.items()):
                    if self._stop.is_set():
                        return
                    if not isinstance(item, Listed) or self._verdict(path, item.revision) is not None:
                        continue
                    held = self._unchecked.get(path)
                    data = held.unpacked() if held is not None else read(path, self.max_bytes)
                    got = Read.of(data) if isinstance(data, bytes) else None
                    if got is not None and got.revision == item.revision:
                        broken = self._verify(path, got, keep=False).workflow is None
                        if broken:  # listed, but broken: report it (never `|=`: a True set meanwhile stays)
                            self._reassemble = True
                    time.sleep(0)  # let requests in between files
                if self._reassemble:
                    self._look()
            except Exception:  # the checker must outlive any one bad file
                log.exception("checking workflow files failed")

    def _look(self, *, settle: bool = False) -> None:
        """Reload what changed and tell the listeners about a new snapshot."""
        try:
            before = self._snapshot
            with self._lock:
                if settle:
                    self._settle()
                self._refresh()
                self._unsettled = bool(self._pending)
                self._checked_at = time.monotonic()
            self._log_problems()
            if self._snapshot is not before and self._snapshot is not None:
                log.info("workflows reloaded: %d in service", len(self._snapshot.entries))
                for listener in self._listeners:
                    listener(self._snapshot)
                from handrail.catalog import suggest  # lazy: difflib, for the first unknown id

                suggest.prepare(self._snapshot.entries)
        except Exception:  # the watcher must outlive any one bad refresh
            log.exception("reloading workflows failed; keeping the previous catalog")
        finally:
            self._ready.set()  # nobody waits for a first listing that failed

    def snapshot(self) -> Snapshot:
        """The current snapshot, every file listed; looks for changed files when `interval`
        has passed."""
        current = self._current()
        if not self._unsettled:
            return current
        with self._lock:  # waits for a settling the checker began
            self._settle()
            self._refresh()
            self._unsettled = bool(self._pending)
        assert self._snapshot is not None
        return self._snapshot

    def _current(self) -> Snapshot:
        """The current snapshot, which may leave out files still pending (see _list)."""
        if self._watcher is not None:
            if self._snapshot is None:
                self._ready.wait()  # the watcher's first listing
            if self._snapshot is not None:
                return self._snapshot  # the watcher keeps it current
        now = time.monotonic()
        if self._snapshot is None or now - self._checked_at >= self.interval:
            with self._lock:
                if self._snapshot is None or now - self._checked_at >= self.interval:
                    self._refresh()
                    self._checked_at = time.monotonic()
            if not self._deferred:
                self._log_problems()
        assert self._snapshot is not None
        return self._snapshot

    def reload(self) -> Snapshot:
        with self._lock:
            self._refresh()
            self._checked_at = time.monotonic()
        self._log_problems()
        assert self._snapshot is not None
        return self._snapshot

    def _refresh(self) -> None:
        listing: list[tuple[Source, list[Path]]] = []
        refused: list[Diagnostic] = []
        stamps: dict[Path, Stamp] = {}
        now = time.time_ns()
        for source in self.sources:
            files, problems = discover(source)
            refused.extend(problems)
            listing.append((source, files))
            for path in files:
                try:
                    stamps[path] = stamp(path)
                except OSError:
                    continue
        refused_key = tuple((d.file, d.message) for d in refused)
        refused_key += tuple(("git", s.git.commit or "") for s in self.sources if s.git is not None)
        unchanged = stamps == self._stamps and refused_key == self._refused
        if self._snapshot is not None and unchanged and not self._reassemble:
            return  # nothing changed: nothing read, no new snapshot
        changed = {p for p, s in stamps.items() if self._stamps.get(p) != s}
        dirty = self._snapshot is None or refused_key != self._refused or stamps.keys() != self._stamps.keys()
        for path in (self._listed.keys() | self._pending.keys()) - stamps.keys():
            for state in (
                self._listed,
                self._pending,
                self._digests,
                self._verdicts,
                self._last_good,
                self._last_origin,
                self._unchecked,
            ):
                state.pop(path, None)
        # a server's first listing only lists; after that, a changed file is compiled at
        # once, as before the snapshot that lists it is made (its break shows at once)
        check_now = not self.lazy or self._snapshot is not None
        for path in changed:
            data = read(path, self.max_bytes)
            got = Read.of(data) if isinstance(data, bytes) else data
            digest = got.revision if isinstance(got, Read) else None
            if digest is not None and path in self._listed and self._digests.get(path) == digest:
                continue  # a touch, or a second look at a file still settling: same bytes
            self._digests[path] = digest
            self._check_previous(path)
            item = self._list(path, got, check_now)
            if item is None:  # pending: out of the listing until compiled
                self._listed.pop(path, None)
            else:
                self._listed[path] = item
            dirty = True
        self._refused = refused_key
        self._stamps = {p: _UNSETTLED if now - max(s[0], s[3]) < RACY_NS else s for p, s in stamps.items()}
        if dirty or self._reassemble:  # a touch that changed nothing makes no new snapshot
            self._reassemble = False
            self._generation += 1
            self._snapshot = assemble(
                listing,
                refused,
                self._listed,
                self._verdict,
                self._last_good,
                self._last_origin,
                self._generation,
            )

    def _list(self, path: Path, data: Read | Diagnostic, check: bool) -> Listed | Compiled | None:
        """What the listing holds of the file; None: left pending, because telling what it
        is takes the compiler, which the first answer of a server does not wait for."""
        self._pending.pop(path, None)
        if isinstance(data, Read):
            item = listed(path, data, self._load)
            if item is not None:
                if check:
                    self._verify(path, data, keep=True)
                else:  # kept until checked: should an edit break the file, this may be its last good
                    raw = len(data.data) <= self._raw_left
                    self._raw_left -= len(data.data) if raw else 0
                    self._unchecked[path] = Kept.of(data, raw)
                return item
        if not check:
            self._pending[path] = data
            self._unsettled = True
            return None
        compiled = compile_file(path, data)  # the compiler says what is wrong (or that nothing is)
        if compiled.workflow is None:
            return compiled
        assert isinstance(data, Read)
        self._verify(path, data, keep=True, compiled=compiled)
        return self._last_good[path][0]

    def _settle(self) -> None:
        """Compile and list the pending files; the caller holds `_lock` and refreshes next."""
        for path, data in list(self._pending.items()):
            item = self._list(path, data, True)
            if item is not None:
                self._listed[path] = item
        self._reassemble = True

    def _check_previous(self, path: Path) -> None:
        """The file changed before its listed version was checked: check that version now,
        so that it can be the last good one."""
        with self._state:  # so that a check that took these bytes first has recorded its verdict
            previous = self._unchecked.get(path)
        if previous is not None:  # left in place while compiled: a request may still need them
            self._verify(path, Read(previous.unpacked(), previous.revision), keep=False)

    def _verdict(self, path: Path, rev: str) -> Verdict | None:
        found = self._verdicts.get(path)
        return found if found is not None and found[0] == rev else None

    def _verify(self, path: Path, data: Read, *, keep: bool, compiled: Compiled | None = None) -> Compiled:
        """Compile the file's bytes and record the verdict; a good one becomes its last
        good version (and, with `keep`, goes into the cache of compiled workflows)."""
        compiled = compiled or compile_file(path, data)
        workflow, rev = compiled.workflow, data.revision
        # One critical section: bytes leave `_unchecked` only after their verdict and last
        # good version are recorded, so whoever finds them gone finds those (_check_previous,
        # _load, which reads `_unchecked` before `_last_good` and takes no lock).
        with self._state:
            if self._digests.get(path) != rev:
                # replaced while it was checked (by the checker, or by _check_previous): it
                # judges nothing listed now, and is older than any version checked since
                if workflow is not None and path not in self._last_good:
                    self._last_good[path] = (
                        of_workflow(path, workflow, self._load),
                        zlib.compress(data.data, 1),
                    )
                self._drop_unchecked(path, rev)
                return compiled
            if workflow is None:
                self._verdicts[path] = (rev, compiled)
                self._drop_unchecked(path, rev)
                return compiled
            self._verdicts[path] = (rev, None)
            item = self._listed.get(path)
            if not isinstance(item, Listed) or item.revision != rev:
                item = of_workflow(path, workflow, self._load)
            self._last_good[path] = (item, zlib.compress(data.data, 1))
            self._drop_unchecked(path, rev)
        if keep:
            self._cache.put((path, rev), workflow)
        return compiled

    def _drop_unchecked(self, path: Path, rev: str) -> None:
        kept = self._unchecked.get(path)
        if kept is not None and kept[0] == rev:
            del self._unchecked[path]

    def _load(self, item: Listed) -> Workflow | None:
        """The compiled workflow of a listed file: from the cache, else compiled from its
        last good bytes or from the file. None if it turns out broken: it is then reported
        (a new snapshot) and left out."""
        memo = self._last_loaded
        if memo is not None and memo[0] is item:
            return memo[1]
        found = self._cache.get((item.path, item.revision))
        if found is not None:
            self._last_loaded = (item, found)
            return found
        verdict = self._verdict(item.path, item.revision)
        if verdict is not None and verdict[1] is not None:
            return None  # known broken
        unchecked = self._unchecked.get(item.path)  # first: gone only once the last good is recorded
        last = self._last_good.get(item.path)
        if last is not None and last[0].revision == item.revision:
            data = Read(zlib.decompress(last[1]), item.revision)
        elif unchecked is not None and unchecked[0] == item.revision:
            data = Read(unchecked.unpacked(), item.revision)
        else:
            fresh = read(item.path, self.max_bytes)
            data = Read.of(fresh) if isinstance(fresh, bytes) else Read(b"", "")
            if data.revision != item.revision:
                # changed since it was listed: the watcher lists it again; meanwhile its
                # last good version serves, as it would once the change is listed
                if last is None:
                    return None
                return self._load(last[0]) if last[0] is not item else None
        workflow = self._verify(item.path, data, keep=True).workflow
        if workflow is None:
            self._reassemble = True  # listed, but broken: report it in a new snapshot
            self._wake_checker.set()
        else:
            self._last_loaded = (item, workflow)
        return workflow
