"""File checks: a file matching a glob exists under the workspace (and one holds a regex).

Every path is resolved before it is used: a match that is a link pointing out of
the workspace is never evidence, and the answer says so. Links to folders are not
followed, `.git` folders are not searched, and reading is bounded.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Any

from handrail.model.workflow import FileCheck


@dataclass(frozen=True, slots=True)
class Found:
    passed: bool
    why: str


def within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def check_files(check: FileCheck, root: str, max_entries: int, max_read: int) -> Found:
    """`root` is the workspace, already resolved (os.path.realpath)."""
    glob = check.path
    start = os.path.join(root, *glob.base.split("/")) if glob.base else root
    try:
        real_start = _resolved(start)
    except OSError as exc:
        return Found(False, f"`{glob.base}` cannot be looked at: {_said(exc)}")
    if not within(real_start, root):
        return Found(False, f"`{glob.base}` is a link that points out of the workspace (to {real_start})")
    if not os.path.isdir(real_start):
        return Found(False, f"no file matches `{glob.text}`: there is no folder `{glob.base}`")
    matched: list[str] = []  # relative paths of regular files inside the workspace
    outside: list[str] = []  # matches that are links pointing out
    seen = 0
    prefix = f"{glob.base}/" if glob.base else ""
    folders = [(start, prefix)]
    while folders:
        folder, relative = folders.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name, reverse=True)
        except OSError:
            continue  # gone, or not readable
        seen += len(entries)
        if seen > max_entries:
            return Found(
                False,
                f"more than {max_entries} files and folders under `{glob.base or '.'}`; "
                "the check gives up rather than search on: narrow the glob",
            )
        for entry in entries:
            rel = relative + entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != ".git":
                        folders.append((entry.path, rel + "/"))
                    continue
            except OSError:
                continue
            if not glob.matches(rel):
                continue
            if entry.is_symlink():
                # a folder reached without following links is inside; a link may not be
                try:
                    real = _resolved(entry.path)
                except OSError as exc:
                    outside.append(f"`{rel}` is a link that cannot be resolved ({_said(exc)})")
                    continue
                if not within(real, root):
                    outside.append(f"`{rel}` is a link that points out of the workspace (to {real})")
                    continue
                try:
                    if not stat.S_ISREG(os.stat(real).st_mode):
                        continue
                except OSError:
                    continue  # a broken link
            elif not entry.is_file(follow_symlinks=False):
                continue  # a pipe, a socket, a device
            matched.append(rel)
    matched.sort()
    if not matched:
        why = f"no file matches `{glob.text}`"
        if outside:
            why += "; " + "; ".join(outside[:3]) + " (not evidence)"
        return Found(False, why)
    if check.contains is None:
        return Found(True, _listed("matches", matched))
    return _search(check.contains, root, matched, max_read)


def _search(regex: Any, root: str, matched: list[str], max_read: int) -> Found:
    """Whether one of the matching files holds `regex` (a handrail.patterns.Regex), else why
    none does."""
    unread: list[str] = []
    for rel in matched:
        text = _read(os.path.join(root, *rel.split("/")), max_read)
        if isinstance(text, Unread):
            unread.append(f"`{rel}` {text.why}")
        elif regex.search(text):
            return Found(True, f"`{rel}` contains /{regex.pattern}/")
    searched = _listed("searched", matched)
    why = f"none of the matching files contains /{regex.pattern}/ ({searched})"
    if unread:
        why += "; " + "; ".join(unread[:3]) + (f" and {len(unread) - 3} more" if len(unread) > 3 else "")
    return Found(False, why)


@dataclass(frozen=True, slots=True)
class Unread:
    why: str


def _read(path: str, max_read: int) -> str | Unread:
    """The file's first bytes as text. It is opened without waiting and its type is
    checked on the open file, so a file swapped for a named pipe (or a device) after
    the search is never read from: a read could block for ever."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(_resolved(path), flags)
    except OSError as exc:
        return Unread(f"could not be read ({_said(exc)})")
    with open(fd, "rb") as handle:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return Unread("is no longer a regular file (a named pipe, a device?), so it was not read")
            data = handle.read(max_read)
        except OSError as exc:
            return Unread(f"could not be read ({_said(exc)})")
    return data.decode("utf-8", "replace")


def _resolved(path: str) -> str:
    """os.path.realpath, which raises OSError when a link cannot be read (in /proc)."""
    return os.path.realpath(path)


def _said(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _listed(verb: str, paths: list[str]) -> str:
    shown = ", ".join(f"`{p}`" for p in paths[:5])
    more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
    count = f"{len(paths)} file{'s' * (len(paths) != 1)}"
    return f"{count} {verb}: {shown}{more}"
