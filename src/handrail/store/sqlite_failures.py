"""What a failing SQLite call says (store/sqlite.py): a damaged file, a disk that
cannot be written, a lock held too long, a file that cannot be made; each a
StorageError naming the file and what to do about it."""

from __future__ import annotations

import sqlite3
from typing import Any

from handrail.model.errors import StorageError

DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")  # sqlite3 error names, and their extended forms
UNWRITABLE = ("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_READONLY")
LOCKED = ("SQLITE_BUSY", "SQLITE_LOCKED")


def damaged(path: str, what: str) -> StorageError:
    return StorageError(
        f"the run database {path} is damaged ({' '.join(what.split())[:200]}); handrail "
        f"will neither read nor write it: restore it from a backup, or save what it still holds "
        f"with `sqlite3 {path} .recover | sqlite3 {path}.recovered` and use that file",
        {"database": str(path), "problem": "damaged"},
    )


def failed(path: str, exc: sqlite3.Error, doing: str, busy_timeout: float) -> StorageError:
    """A call's failure other than damage, which the store keeps as its answer."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    data: dict[str, Any] = {"database": str(path)}
    if name.startswith(LOCKED):
        return locked(path, busy_timeout)
    if name.startswith(UNWRITABLE):
        return StorageError(
            f"the run database {path} could not be written ({exc}); nothing of this call "
            "was saved: is its disk full or read-only? Free space or fix its permissions, then "
            "try again",
            data | {"problem": "unwritable"},
        )
    return StorageError(f"{doing} {path}: {exc}", data)


def locked(path: str, busy_timeout: float) -> StorageError:
    return StorageError(
        f"the run database {path} is locked: its write lock stayed taken (by another "
        f"process, or by writes queued before this one) for the {busy_timeout:g} s a write "
        f"waits; nothing was written, try again (`fuser {path}` shows who has it open)",
        {"database": str(path), "problem": "locked", "lock": "write"},
    )


def uncreated(path: str, exc: OSError) -> StorageError:
    return StorageError(f"cannot create the run database {path}: {exc}", {"database": str(path)})
