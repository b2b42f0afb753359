"""Finding the workflow files of a folder, whatever the folder holds.

A source folder is written by people and tools we do not control: it may hold
symbolic link loops, links leading elsewhere, FIFOs, names that are not UTF-8,
folders nested thousands deep, files that vanish while we look. Each of these is
reported as a problem of its own path (H002) and the walk carries on; nothing in
a folder can stop the others loading or make the walk hang.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from handrail.model.errors import Diagnostic
from handrail.model.limits import MAX_FOLDER_DEPTH


def display_path(path: str | os.PathLike[str]) -> str:
    """The path as text a reply can carry: bytes that are not UTF-8 (kept by Python as
    lone surrogates, which JSON cannot encode) are shown as `\\xff` escapes."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def refusal(path: str | os.PathLike[str], message: str) -> Diagnostic:
    return Diagnostic("H002", "error", message, "", 1, 1, None, display_path(path))


NOT_REGULAR = "refused: not a regular file"


def _real(path: str) -> str:
    """The path with every link resolved (never raises, even on a loop)."""
    return os.path.realpath(path)


def _inside(real: str, base: str) -> bool:
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def _why_unreadable(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "refused: a symbolic link loop"
    return f"refused: cannot be read ({exc.strerror or exc})"


def discover(root: Path, *, max_depth: int = MAX_FOLDER_DEPTH) -> tuple[list[Path], list[Diagnostic]]:
    """The *.json files under `root` (recursively, in name order), refusing links that
    leave it and anything that is not a regular file. Links to folders are never
    followed (so a link loop cannot trap the walk); folders deeper than `max_depth`
    are not entered. The walk is iterative: no nesting can exhaust the stack."""
    try:
        top = os.stat(root)
    except FileNotFoundError:
        if os.path.islink(root):
            return [], [refusal(root, "refused: the link leads nowhere")]
        return [], []
    except OSError as exc:
        return [], [refusal(root, _why_unreadable(exc))]
    if stat.S_ISREG(top.st_mode):
        return [root], []
    if not stat.S_ISDIR(top.st_mode):
        return [], [refusal(root, NOT_REGULAR)]
    found: list[Path] = []
    refused: list[Diagnostic] = []
    base = _real(str(root))
    stack: list[tuple[str, int]] = [(str(root), 0)]
    while stack:
        directory, depth = stack.pop()
        try:
            with os.scandir(directory) as listing:
                items = sorted(listing, key=lambda item: item.name)
        except OSError as exc:
            refused.append(refusal(directory, _why_unreadable(exc)))
            continue
        folders: list[str] = []
        for item in items:
            kind, problem = _classify(item, base, root)
            if problem is not None:
                refused.append(problem)
            elif kind == "folder":
                if depth + 1 > max_depth:
                    refused.append(refusal(item.path, f"refused: nested deeper than {max_depth} folders"))
                else:
                    folders.append(item.path)
            elif kind == "file":
                found.append(Path(item.path))
        stack.extend((folder, depth + 1) for folder in reversed(folders))
    return found, refused


def _classify(item: os.DirEntry[str], base: str, root: Path) -> tuple[str, Diagnostic | None]:
    """("folder" | "file" | "skip", why it is refused or None). A link is never walked
    into; a link to a file counts as that file when it stays inside the source."""
    wanted = item.name.endswith(".json")
    try:
        if not item.is_symlink():
            mode = item.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                return "folder", None
            if not wanted:
                return "skip", None
            return ("file", None) if stat.S_ISREG(mode) else ("skip", refusal(item.path, NOT_REGULAR))
        target = os.stat(item.path)
    except FileNotFoundError:  # gone since the listing, or a link leading nowhere
        return "skip", (refusal(item.path, NOT_REGULAR) if wanted and os.path.islink(item.path) else None)
    except OSError as exc:
        return "skip", refusal(item.path, _why_unreadable(exc))
    folder = stat.S_ISDIR(target.st_mode)
    if not _inside(_real(item.path), base):
        if wanted or folder:
            return "skip", refusal(item.path, f"refused: the link leads outside {display_path(root)}")
        return "skip", None
    if folder or not wanted:
        return "skip", None  # a link to a folder inside the source: its files are found there
    return ("file", None) if stat.S_ISREG(target.st_mode) else ("skip", refusal(item.path, NOT_REGULAR))
