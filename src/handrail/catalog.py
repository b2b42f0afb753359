"""Where workflows come from, and keeping them current while the server runs.

Sources, in increasing precedence: the bundled set, the user folders, the
project folder, the environment's paths, then every --workflows path. A later
source's workflow replaces an earlier one with the same id.

The catalog is an immutable Snapshot, swapped whole; a request never sees half a
reload. A file that breaks keeps its last good version in service, and the break
is reported beside it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeAlias

from handrail import folders, suggest
from handrail._resources import resource
from handrail.errors import Diagnostic
from handrail.limits import MAX_FILE_BYTES as DEFAULT_MAX_BYTES

if TYPE_CHECKING:  # the compiler is loaded on first compile, after `initialize` is answered
    from handrail.compiler import Compiled
    from handrail.git_sources import GitSource
    from handrail.model import Workflow

log = logging.getLogger("handrail.catalog")

FALSE_WORDS = {"0", "false", "no", "off"}
# A file changed this recently may change again without its stamp changing (timestamps
# are coarse); its stamp is not trusted, so it is read again at the next look.
RACY_NS = 2_000_000_000
_UNSETTLED = (-1, -1, -1, -1)
WATCH_ATTEMPTS = 3  # failures to watch the folders (e.g. out of inotify watches) before polling them
Stamp = tuple[int, int, int, int]  # mtime_ns, size, inode, ctime_ns


@dataclass(frozen=True, slots=True)
class Source:
    name: str  # bundled | user | project | env | cli
    path: Path
    git: GitSource | None = field(default=None, compare=False)  # a git repository's checkout


@dataclass(frozen=True, slots=True)
class Entry:
    workflow: Workflow
    source: Source
    stale: bool = False  # the file broke; this is its last good version
    origin: Mapping[str, Any] | None = None  # a git source's url and commit (of this version)


Problem: TypeAlias = "Diagnostic | Compiled"  # a broken file's diagnostics are located on first look


@dataclass(frozen=True, slots=True)
class Snapshot:
    entries: Mapping[str, Entry]  # workflow id -> entry
    found: tuple[Problem, ...]  # broken or refused files
    overrides: tuple[tuple[str, Source, Source], ...]  # (id, winner, loser)
    per_source: Mapping[Source, int]
    generation: int = 0
    _problems: tuple[Diagnostic, ...] | None = field(default=None, repr=False, compare=False)

    @property
    def problems(self) -> tuple[Diagnostic, ...]:
        """Every problem in the sources. Computed on first use (and cached), so that
        start-up does not pay for explaining broken files nobody has asked about."""
        if self._problems is None:
            out: list[Diagnostic] = []
            for item in self.found:
                out.extend((item,) if isinstance(item, Diagnostic) else item.errors)
            object.__setattr__(self, "_problems", tuple(out))
        assert self._problems is not None
        return self._problems

    @property
    def workflows(self) -> list[Workflow]:
        return [e.workflow for e in self.entries.values()]

    def get(self, workflow_id: str) -> Workflow | None:
        entry = self.entries.get(workflow_id)
        return entry.workflow if entry is not None else None


@dataclass(frozen=True, slots=True)
class Summary:
    """What `initialize` lists about a workflow, read without compiling it."""

    id: str
    name: str
    description: str
    step_count: int


def _count_steps(steps: list[Any]) -> int:
    count = 0
    for step in steps:
        count += 1
        body = step.get("body") if isinstance(step, dict) else None
        if isinstance(body, list):
            count += _count_steps(body)
    return count


def default_sources(
    extra: Iterable[str | Path] = (),
    *,
    bundled: bool | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
    git_refresh: float | None = None,
) -> list[Source]:
    """Raises git_sources.GitSpecError for a `git+` source it cannot understand."""
    env = os.environ if environ is None else environ
    if bundled is None:
        bundled = env.get("WORKFLOW_INCLUDE_BUNDLED", "true").strip().lower() not in FALSE_WORDS
    home = home or Path.home()
    cwd = cwd or Path.cwd()
    sources: list[Source] = []
    if bundled:
        sources.append(Source("bundled", resource("workflows")))
    sources.append(Source("user", home / ".workrail" / "workflows"))
    sources.append(Source("user", home / ".handrail" / "workflows"))
    sources.append(Source("project", cwd / "workflows"))
    for variable in ("WORKFLOW_STORAGE_PATH", "HANDRAIL_WORKFLOWS"):
        for part in env.get(variable, "").split(os.pathsep):
            if part.strip():
                sources.append(Source(f"env:{variable}", Path(part.strip()).expanduser()))
    from handrail import git_sources  # git sources are a module of their own

    for spec in git_sources.specs_from_env(env):
        sources.append(git_sources.source(f"env:{git_sources.ENV_VARIABLE}", spec, env, git_refresh))
    for item in extra:
        if git_sources.is_git(item):
            sources.append(git_sources.source("cli", str(item), env, git_refresh))
            continue
        sources.append(Source("cli", Path(item).expanduser()))
    unique: list[Source] = []
    seen: set[Path] = set()
    for source in reversed(sources):  # the same folder twice counts once, at its highest place
        key = _resolved(source.path)
        if key not in seen:
            seen.add(key)
            unique.append(source)
    return list(reversed(unique))


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()


def discover(source: Source) -> tuple[list[Path], list[Diagnostic]]:
    """The *.json files of a source (recursively), refusing links that leave it and
    anything that is not a regular file (see handrail.folders)."""
    if source.git is not None:  # fetched on first look; a failed fetch is a warning
        problems = source.git.problems()
        if not source.path.is_dir():
            return [], problems
        files, refused = folders.discover(source.path)
        return files, problems + refused
    root = source.path
    if not root.exists() and not root.is_symlink():
        if source.name == "cli" or source.name.startswith("env:"):  # named on purpose: say so
            named = "--workflows" if source.name == "cli" else source.name.removeprefix("env:")
            return [], [
                Diagnostic(
                    "H002",
                    "warning",
                    f"no such file or folder: {root}",
                    "",
                    1,
                    1,
                    f"check the path given to {named}",
                    str(root),
                )
            ]
        return [], []  # the default places need not exist
    return folders.discover(root)


@dataclass
class Catalog:
    """Compiles the sources, and recompiles what changed at most every `interval` seconds."""

    sources: list[Source]
    max_bytes: int = DEFAULT_MAX_BYTES
    interval: float = 0.25
    _snapshot: Snapshot | None = None
    _stamps: dict[Path, Stamp] = field(default_factory=dict)
    _compiled: dict[Path, Compiled] = field(default_factory=dict)
    _last_good: dict[Path, Workflow] = field(default_factory=dict)
    _last_origin: dict[Path, Mapping[str, Any]] = field(default_factory=dict)  # of a git file's last good
    _digests: dict[Path, bytes | None] = field(default_factory=dict)  # of the bytes last compiled
    _checked_at: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _generation: int = 0
    _refused: tuple[tuple[str, str], ...] = ()
    _watcher: threading.Thread | None = None
    _logged: int = -1
    _deferred: bool = False  # serving: problems are logged by the watcher, not on the start-up path
    _stop: threading.Event = field(default_factory=threading.Event)
    _ready: threading.Event = field(default_factory=threading.Event)
    _listeners: list[Callable[[Snapshot], None]] = field(default_factory=list)
    _summaries: list[Summary] | None = None
    _summaries_lock: threading.Lock = field(default_factory=threading.Lock)

    def watch(self, interval: float | None = None) -> None:
        """Compile the sources, then keep them current, on a daemon thread woken by the file
        system's events (see watch.py), so that a request only reads the current snapshot:
        no file system work on the request path. `interval`: how long changes are gathered
        before a reload. Returns at once; `snapshot()` waits for the first compile."""
        if self._watcher is not None:
            return
        if interval is not None:
            self.interval = interval
        self._deferred = True
        for source in self.sources:
            if source.git is not None:
                source.git.start(self._stop, on_change=self._look)
        self._watcher = threading.Thread(target=self._watch, name="handrail-watch", daemon=True)
        self._watcher.start()

    @property
    def ready(self) -> Snapshot | None:
        """The compiled snapshot if there is one yet; never compiles."""
        return self._snapshot

    def summaries(self) -> list[Summary]:
        """The workflows as `initialize` lists them, from a quick read of the sources: parse
        and schema-check each file, compile nothing. Precedence is as in a snapshot. Read
        once while the first compile runs: over HTTP every client's `initialize` or
        `server/discover` would otherwise read every file again."""
        with self._summaries_lock:
            if self._summaries is None or self._snapshot is not None:
                self._summaries = self._read_summaries()
            return self._summaries

    def _read_summaries(self) -> list[Summary]:
        import orjson

        from handrail.schemas import check_workflow

        found: dict[str, Summary] = {}
        for source in self.sources:
            files, _ = discover(source)
            for path in files:
                data = _read(path, self.max_bytes)  # never waits on a FIFO
                if not isinstance(data, bytes):
                    continue
                try:
                    document = orjson.loads(data)
                except ValueError:
                    continue
                if check_workflow(document):
                    found[document["id"]] = Summary(
                        document["id"],
                        document["name"],
                        document["description"],
                        _count_steps(document["steps"]),
                    )
        return [found[k] for k in sorted(found)]

    def on_change(self, listener: Callable[[Snapshot], None]) -> None:
        """Call `listener(snapshot)` (from the watcher thread) whenever a new snapshot appears."""
        self._listeners.append(listener)

    def close(self) -> None:
        self._stop.set()
        self._ready.set()

    def _log_problems(self) -> None:
        """Log each new snapshot's problems once. The server does this from the watcher
        thread, off the start-up path: explaining a broken file imports jsonschema."""
        snapshot = self._snapshot
        if snapshot is None or snapshot.generation == self._logged:
            return
        self._logged = snapshot.generation
        for problem in snapshot.problems:  # errors, and the warning about a missing source
            log.warning("%s", problem.render())
        for entry in snapshot.entries.values():
            if entry.stale:
                log.warning("%s is broken; still serving its last good version", entry.workflow.file)

    def _watch(self) -> None:
        from handrail import watch

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

    def _look(self) -> None:
        """Reload what changed and tell the listeners about a new snapshot."""
        try:
            before = self._snapshot
            with self._lock:
                self._refresh()
                self._checked_at = time.monotonic()
            self._log_problems()
            if self._snapshot is not before and self._snapshot is not None:
                log.info("workflows reloaded: %d in service", len(self._snapshot.entries))
                for listener in self._listeners:
                    listener(self._snapshot)
                suggest.prepare(self._snapshot.entries)
        except Exception:  # the watcher must outlive any one bad refresh
            log.exception("reloading workflows failed; keeping the previous catalog")
        finally:
            self._ready.set()  # nobody waits for a first compile that failed

    def snapshot(self) -> Snapshot:
        """The current snapshot; looks for changed files when `interval` has passed."""
        if self._watcher is not None:
            if self._snapshot is None:
                self._ready.wait()  # the watcher's first compile
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
                    stamps[path] = _stamp(path)
                except OSError:
                    continue
        refused_key = tuple((d.file, d.message) for d in refused)
        refused_key += tuple(("git", s.git.commit or "") for s in self.sources if s.git is not None)
        if self._snapshot is not None and stamps == self._stamps and refused_key == self._refused:
            return  # nothing changed: no recompilation, no new snapshot
        changed = {p for p, s in stamps.items() if self._stamps.get(p) != s}
        dirty = self._snapshot is None or refused_key != self._refused or stamps.keys() != self._stamps.keys()
        for path in set(self._compiled) - set(stamps):
            self._compiled.pop(path, None)
            self._digests.pop(path, None)
            self._last_good.pop(path, None)
            self._last_origin.pop(path, None)
        for path in changed:
            data = _read(path, self.max_bytes)
            digest = hashlib.blake2b(data, digest_size=16).digest() if isinstance(data, bytes) else None
            if digest is not None and path in self._compiled and self._digests.get(path) == digest:
                continue  # a touch, or a second look at a file still settling: same bytes
            compiled = _lean(_compile(path, data))
            self._digests[path] = digest
            if not _same(self._compiled.get(path), compiled):
                self._compiled[path] = compiled
                dirty = True
        self._refused = refused_key
        self._stamps = {p: _UNSETTLED if now - max(s[0], s[3]) < RACY_NS else s for p, s in stamps.items()}
        if dirty:  # a touch, or a look at an unsettled file, that changed nothing makes no new snapshot
            self._snapshot = self._assemble(listing, refused)

    def _assemble(self, listing: list[tuple[Source, list[Path]]], refused: list[Diagnostic]) -> Snapshot:
        entries: dict[str, Entry] = {}
        problems: list[Problem] = list(refused)
        overrides: list[tuple[str, Source, Source]] = []
        per_source: dict[Source, int] = {}
        for source, files in listing:
            count = 0
            origin: Mapping[str, Any] | None = source.git.describe() if source.git else None
            for path in files:
                compiled = self._compiled.get(path)
                if compiled is None:
                    continue
                workflow, stale, served_origin = compiled.workflow, False, origin
                if workflow is None:
                    problems.append(compiled)
                    workflow = self._last_good.get(path)
                    if workflow is None:
                        continue
                    stale, served_origin = True, self._last_origin.get(path, origin)
                else:
                    self._last_good[path] = workflow
                    if origin is not None:
                        self._last_origin[path] = origin
                count += 1
                previous = entries.get(workflow.id)
                if previous is not None:
                    if previous.source == source:
                        problems.append(
                            Diagnostic(
                                "H210",
                                "warning",
                                f"workflow id `{workflow.id}` is also defined in {previous.workflow.file}; "
                                "this file wins",
                                "/id",
                                1,
                                1,
                                None,
                                str(path),
                            )
                        )
                    else:
                        overrides.append((workflow.id, source, previous.source))
                entries[workflow.id] = Entry(workflow, source, stale, served_origin)
            per_source[source] = count
        self._generation += 1
        return Snapshot(
            MappingProxyType(dict(sorted(entries.items()))),
            tuple(problems),
            tuple(overrides),
            MappingProxyType(per_source),
            self._generation,
        )


def _stamp(path: Path) -> Stamp:
    st = path.stat()
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)


def _read(path: Path, max_bytes: int) -> bytes | Diagnostic:
    """The file's bytes, read once and without waiting (a FIFO put in place of a file
    must not stall the watcher), or why they cannot be had."""
    try:
        with open(path, "rb", opener=_nonblocking) as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return folders.refusal(path, folders.NOT_REGULAR)
            # read(max_bytes + 1) would set aside a megabyte for every file: ask for its size
            data = handle.read(min(info.st_size, max_bytes) + 1)
            if len(data) > info.st_size:  # it grew since: read on, to the limit
                data += handle.read(max_bytes + 1 - len(data))
    except OSError as exc:
        return folders.refusal(path, f"cannot read the file: {exc.strerror or exc}")
    if len(data) > max_bytes:
        return Diagnostic(
            "H002",
            "error",
            f"the file is larger than {max_bytes} bytes",
            "",
            1,
            1,
            "raise the limit with --max-file-size, or split the workflow",
            folders.display_path(path),
        )
    return data


def _nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | getattr(os, "O_NONBLOCK", 0))


def _compile(path: Path, data: bytes | Diagnostic) -> Compiled:
    from handrail.compiler import Compiled, compile_text

    display = folders.display_path(path)
    if isinstance(data, Diagnostic):
        return Compiled(display, None, (data,))
    try:
        return compile_text(data, display, origin="source")  # a configured source: may run commands
    except Exception as exc:  # a compiler bug in one file must not stop the others loading
        log.exception("compiling %s failed", display)
        refusal = folders.refusal(path, f"the file could not be compiled ({exc!r})")
        return Compiled(refusal.file, None, (refusal,))


def _lean(compiled: Compiled) -> Compiled:
    """What the catalog keeps of a file that compiled: its workflow. Its warnings are never
    listed (only broken files are), and the means to locate them (the parsed document and
    the text, a third of a compiled workflow's memory) would be kept for nothing."""
    if compiled.workflow is None:
        return compiled
    from handrail.compiler import Compiled

    return Compiled(compiled.file, compiled.workflow, ())


def _same(old: Compiled | None, new: Compiled) -> bool:
    if old is None:
        return False
    revisions = [c.workflow.revision if c.workflow is not None else None for c in (old, new)]
    return revisions[0] == revisions[1] and old.diagnostics == new.diagnostics


def load_catalog(*paths: str | Path, bundled: bool = True, max_bytes: int = DEFAULT_MAX_BYTES) -> Catalog:
    """A catalog of exactly the given files and folders (and the bundled set unless
    bundled=False): the library entry point, free of user and environment sources."""
    sources = [Source("bundled", resource("workflows"))] if bundled else []
    sources += [Source("cli", Path(p)) for p in paths]
    catalog = Catalog(sources, max_bytes=max_bytes)
    catalog.reload()
    return catalog
