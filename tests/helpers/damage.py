"""Damage one table of a SQLite file on purpose: its root page overwritten while no
store has it open, as a disk fault or a stray write would."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def damage_table(database: Path, table: str) -> None:
    db = sqlite3.connect(database)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the file itself
    (page_size,) = db.execute("PRAGMA page_size").fetchone()
    (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    db.close()
    with database.open("r+b") as file:
        file.seek(page_size * (root - 1))
        file.write(b"\xa5" * page_size)
