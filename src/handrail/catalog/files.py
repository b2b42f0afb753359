"""Reading one workflow file: its stamp, its bytes (never waiting on a FIFO), what a
listing needs of it (a JSON parse, no compile), and its compiled workflow. The bytes
read are hashed once and parsed once (`Read`): the listing and the compiler share both."""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from handrail.catalog import folders
from handrail.model.codec import loads, source_revision
from handrail.model.errors import Diagnostic
from handrail.model.slotted import Frozen
from handrail.observe.logs import Log

if TYPE_CHECKING:  # the compiler is loaded on first compile, after `initialize` is answered
    from handrail.compiler import Compiled
    from handrail.model.workflow import Workflow

log = Log("handrail.catalog")  # logging loads with the first record

Stamp = tuple[int, int, int, int]  # mtime_ns, size, inode, ctime_ns
BOM = b"\xef\xbb\xbf"


class Listed(Frozen):
    """A workflow file as listings show it, read without compiling it: a few strings.
    `load` compiles it on demand (the catalog's bounded cache); None if it turns out broken.
    (A Frozen value, not a dataclass: a server lists its files before its first answer.)"""

    __slots__ = (
        "category",
        "description",
        "file",
        "id",
        "load",
        "name",
        "path",
        "revision",
        "step_count",
        "version",
    )
    _uncompared = frozenset({"load"})

    id: str
    name: str
    description: str
    version: str
    category: str
    step_count: int
    file: str
    path: Path
    revision: str
    load: Callable[[Listed], Workflow | None]

    def __init__(
        self,
        id: str,
        name: str,
        description: str,
        version: str,
        category: str,
        step_count: int,
        file: str,  # as diagnostics name it
        path: Path,
        revision: str,  # as Workflow.revision: a digest of the bytes
        load: Callable[[Listed], Workflow | None],
    ) -> None:
        self._fill(locals())


def stamp(path: Path) -> Stamp:
    st = path.stat()
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)


class Read:
    """A file's bytes as read, with their revision (hashed once) and, once a listing has
    parsed them, their JSON: what the compiler is handed, so that it does neither again.
    Held only while the file is listed and checked, never kept. (Slotted by hand, not a
    dataclass: a server makes the class before its first answer.)"""

    __slots__ = ("data", "document", "revision")

    def __init__(self, data: bytes, revision: str, document: dict[str, Any] | None = None) -> None:
        self.data = data
        self.revision = revision
        self.document = document  # orjson's parse of `data`

    def parsed(self, document: dict[str, Any]) -> None:
        """The listing's parse of `data`, kept for the compiler."""
        self.document = document

    @classmethod
    def of(cls, data: bytes) -> Read:
        return cls(data, source_revision(data.removeprefix(BOM)))


class Kept(NamedTuple):
    """A listed file's bytes, kept until it is checked (they may become its last good
    version): zlib compressed, or as read while a server's first listing has room for
    them (catalog/live.py), so that its first answer does not wait for zlib."""

    revision: str
    data: bytes
    packed: bool  # compressed

    @classmethod
    def of(cls, data: Read, raw: bool) -> Kept:
        return (
            cls(data.revision, data.data, False)
            if raw
            else cls(data.revision, zlib.compress(data.data, 1), True)
        )

    def unpacked(self) -> bytes:
        return zlib.decompress(self.data) if self.packed else self.data


def read(path: Path, max_bytes: int) -> bytes | Diagnostic:
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


def listed(path: Path, read: Read, load: Callable[[Listed], Workflow | None]) -> Listed | None:
    """What a listing shows of the file, from a JSON parse (kept in `read` for the
    compiler); None when that is not enough to tell (not JSON, or fields missing or of
    the wrong type): the compiler then says."""
    try:
        document = loads(read.data.removeprefix(BOM))
    except ValueError:  # also integers past 64 bits, which the compiler reads exactly
        return None
    if not isinstance(document, dict):
        return None
    read.parsed(document)
    id_, name, description, version = (document.get(k) for k in ("id", "name", "description", "version"))
    category, steps = document.get("category", "general"), document.get("steps")
    if not (
        isinstance(id_, str)
        and isinstance(name, str)
        and isinstance(description, str)
        and isinstance(version, str)
        and isinstance(category, str)
        and isinstance(steps, list)
    ):
        return None
    return Listed(
        id_,
        name,
        description,
        version,
        category,
        _count_steps(steps),
        folders.display_path(path),
        path,
        read.revision,
        load,
    )


def of_workflow(path: Path, workflow: Workflow, load: Callable[[Listed], Workflow | None]) -> Listed:
    w = workflow
    return Listed(
        w.id, w.name, w.description, w.version, w.category, w.step_count, w.file, path, w.revision, load
    )


def _count_steps(steps: list[Any]) -> int:
    count = 0
    for step in steps:
        count += 1
        body = step.get("body") if isinstance(step, dict) else None
        if isinstance(body, list):
            count += _count_steps(body)
    return count


def compile_file(path: Path, read: Read | Diagnostic) -> Compiled:
    from handrail.compiler import Compiled, compile_text  # lazy: after the listing, on first compile

    display = folders.display_path(path)
    if isinstance(read, Diagnostic):
        return Compiled(display, None, (read,))
    try:
        # read from a configured source: its command checks may run (spec/checks.md)
        compiled = compile_text(
            read.data, display, origin="source", parsed=read.document, revision=read.revision
        )
        return lean(compiled)
    except Exception as exc:  # a compiler bug in one file must not stop the others loading
        log.exception("compiling %s failed", display)
        refusal = folders.refusal(path, f"the file could not be compiled ({exc!r})")
        return Compiled(refusal.file, None, (refusal,))


def lean(compiled: Compiled) -> Compiled:
    """What the catalog keeps of a file that compiled: its workflow. Its warnings are never
    listed (only broken files are), and the means to locate them (the parsed document and
    the text, a third of a compiled workflow's memory) would be kept for nothing."""
    if compiled.workflow is None:
        return compiled
    from handrail.compiler import Compiled  # lazy: a server lists its workflows before the compiler loads

    return Compiled(compiled.file, compiled.workflow, ())
