"""Another process holding a SQLite database's write lock, for as long as a `with` lasts:
the tests and the benchmark of a store that must not queue reads behind it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.read()
db.execute("ROLLBACK")
"""


@contextmanager
def write_lock_held(database: Path, timeout: float = 60) -> Iterator[subprocess.Popen[str]]:
    """Yields the holding process once it holds the lock; it lets go when the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(database)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield holder
    finally:
        holder.communicate("", timeout=timeout)
