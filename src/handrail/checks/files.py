"""File checks: a file matching a glob exists under the workspace (and one holds a regex).

Every path is resolved before it is used: a match that is a link pointing out of
the workspace is never evidence, and the answer says so. Links to folders are not
followed, `.git` folders are not searched, and reading is bounded.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from handrail.model import FileCheck


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
    real_start = os.path.realpath(start)
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
                real = os.path.realpath(entry.path)
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
    regex = check.contains
    if regex is None:
        return Found(True, _listed("matches", matched))
    for rel in matched:
        text = _read(os.path.join(root, *rel.split("/")), max_read)
        if text is not None and regex.search(text):
            return Found(True, f"`{rel}` contains /{regex.pattern}/")
    searched = _listed("searched", matched)
    return Found(False, f"none of the matching files contains /{regex.pattern}/ ({searched})")


def _read(path: str, max_read: int) -> str | None:
    try:
        with open(os.path.realpath(path), "rb") as handle:
            data = handle.read(max_read)
    except OSError:
        return None
    return data.decode("utf-8", "replace")


def _listed(verb: str, paths: list[str]) -> str:
    shown = ", ".join(f"`{p}`" for p in paths[:5])
    more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
    count = f"{len(paths)} file{'s' * (len(paths) != 1)}"
    return f"{count} {verb}: {shown}{more}"
