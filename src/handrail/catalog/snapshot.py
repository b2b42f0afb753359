"""The catalog as a request sees it: an immutable Snapshot, swapped whole, so that a
request never sees half a reload. Its entries are listed cheaply (handrail.catalog.files.
Listed) and compiled on first use; `assemble` makes one from a listing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeAlias

from handrail.catalog.files import Listed
from handrail.catalog.sources import Source
from handrail.model.errors import Diagnostic
from handrail.model.slotted import Frozen

if TYPE_CHECKING:
    from handrail.compiler import Compiled
    from handrail.model.workflow import Workflow

Problem: TypeAlias = "Diagnostic | Compiled"  # a broken file's diagnostics are located on first look


class BrokenWorkflow(LookupError):
    """A listed workflow turned out broken when it was compiled (the catalog reports it)."""


class Entry(Frozen):
    """(Frozen values, not dataclasses, here: a server makes its first snapshot before its
    first answer.)"""

    __slots__ = ("item", "origin", "source", "stale")

    item: Workflow | Listed
    source: Source
    stale: bool
    origin: Mapping[str, Any] | None

    def __init__(
        self,
        item: Workflow | Listed,  # compiled, or listed and compiled on first use
        source: Source,
        stale: bool = False,  # the file broke; this is its last good version
        origin: Mapping[str, Any] | None = None,  # a git source's url and commit (of this version)
    ) -> None:
        self._fill(locals())

    @property
    def id(self) -> str:
        return self.item.id

    @property
    def workflow(self) -> Workflow:
        """The compiled workflow; raises BrokenWorkflow if it turned out broken."""
        found = self.compiled()
        if found is None:
            raise BrokenWorkflow(self.item.file)
        return found

    def compiled(self) -> Workflow | None:
        item = self.item
        return item.load(item) if isinstance(item, Listed) else item


class Snapshot(Frozen):
    __slots__ = ("_problems", "entries", "found", "generation", "overrides", "per_source")
    _uncompared = frozenset({"_problems"})

    entries: Mapping[str, Entry]
    found: tuple[Problem, ...]
    overrides: tuple[tuple[str, Source, Source], ...]
    per_source: Mapping[Source, int]
    generation: int
    _problems: tuple[Diagnostic, ...] | None  # computed on first use: see `problems`

    def __init__(
        self,
        entries: Mapping[str, Entry],  # workflow id -> entry
        found: tuple[Problem, ...],  # broken or refused files
        overrides: tuple[tuple[str, Source, Source], ...],  # (id, winner, loser)
        per_source: Mapping[Source, int],
        generation: int = 0,
    ) -> None:
        self._fill({**locals(), "_problems": None})

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
    def workflows(self) -> list[Workflow | Listed]:
        """What listings show of each workflow (id, name, description, version, category,
        step_count, file), compiling nothing."""
        return [e.item for e in self.entries.values()]

    def get(self, workflow_id: str) -> Workflow | None:
        """The compiled workflow (compiled now if need be), None if unknown or broken."""
        entry = self.entries.get(workflow_id)
        if entry is None:
            return None
        item = entry.item
        return item.load(item) if type(item) is Listed else item  # type: ignore[return-value]

    def why_broken(self, workflow_id: str) -> Diagnostic | None:
        """For an id `get` cannot give: the first error of the file that defines it, when
        that file is listed but does not compile, or is broken and named after the id
        (a broken file's id may not be readable). None when no broken file is known."""
        entry = self.entries.get(workflow_id)
        if entry is not None and isinstance(entry.item, Listed) and entry.compiled() is None:
            from handrail.compiler import compile_path  # lazy: on the first compile

            errors = compile_path(entry.item.path, display=entry.item.file).errors
            if errors:
                return errors[0]
        for problem in self.problems:
            name = problem.file.replace("\\", "/").rsplit("/", 1)[-1]
            if problem.severity == "error" and name == f"{workflow_id}.json":
                return problem
        return None


def assemble(
    listing: list[tuple[Source, list[Path]]],
    refused: list[Diagnostic],
    listed: Mapping[Path, Listed | Compiled],
    verdict: Callable[[Path, str], tuple[str, Compiled | None] | None],
    last_good: Mapping[Path, tuple[Listed, bytes]],
    last_origin: dict[Path, Mapping[str, Any]],
    generation: int,
) -> Snapshot:
    """The snapshot of a listing, in source order (a later source's workflow overrides an
    earlier one's): a broken file serves its last good version, marked stale, and is
    reported. `last_origin` is where a git file's last good origin is kept (updated here)."""
    entries: dict[str, Entry] = {}
    problems: list[Problem] = list(refused)
    overrides: list[tuple[str, Source, Source]] = []
    per_source: dict[Source, int] = {}
    for source, files in listing:
        count = 0
        origin: Mapping[str, Any] | None = source.git.describe() if source.git else None
        for path in files:
            found = listed.get(path)
            if found is None:
                continue
            item, stale, served_origin = found, False, origin
            broken = found if not isinstance(found, Listed) else None
            if isinstance(found, Listed):
                judged = verdict(path, found.revision)
                broken = judged[1] if judged is not None else None
            if broken is not None:
                problems.append(broken)
                last = last_good.get(path)
                if last is None:
                    continue
                item, stale, served_origin = last[0], True, last_origin.get(path, origin)
            elif origin is not None:
                last_origin[path] = origin
            assert isinstance(item, Listed)
            count += 1
            previous = entries.get(item.id)
            if previous is not None:
                if previous.source == source:
                    problems.append(_also_defined(item, previous, path))
                else:
                    overrides.append((item.id, source, previous.source))
            entries[item.id] = Entry(item, source, stale, served_origin)
        per_source[source] = count
    return Snapshot(
        MappingProxyType(dict(sorted(entries.items()))),
        tuple(problems),
        tuple(overrides),
        MappingProxyType(per_source),
        generation,
    )


def _also_defined(item: Listed, previous: Entry, path: Path) -> Diagnostic:
    return Diagnostic(
        "H210",
        "warning",
        f"workflow id `{item.id}` is also defined in {previous.item.file}; this file wins",
        "/id",
        1,
        1,
        None,
        str(path),
    )
