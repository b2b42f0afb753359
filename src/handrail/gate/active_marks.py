"""Where the gate last saw a run active: one small file per workspace under
`$HANDRAIL_HOME/gate-active/`, written when a hook finds a run holding its folder and
taken away when a hook there finds none.

They answer one question only, when the run store cannot be read: may a run be active
here? (spec/gate.md, "When the gate cannot judge"). The store stays the truth; a mark
is never read while it answers. Keeping them costs a stat per hook: a mark is written
only when it is missing, and removed only when one is there.
"""

from __future__ import annotations

import os
import zlib  # not hashlib: a hook loads no OpenSSL; a mark's name only needs to be unlikely to collide

FOLDER = "gate-active"


def _mark(home: str, workspace: str) -> str:
    data = os.path.normpath(workspace).encode("utf-8", "surrogateescape")
    name = f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}"
    return os.path.join(home, FOLDER, name)


def _ancestors(folder: str) -> list[str]:
    folder = os.path.normpath(folder)
    found = [folder]
    while True:
        parent = os.path.dirname(folder)
        if parent == folder:
            return found
        found.append(parent)
        folder = parent


def note(home: str, seen: list[str], folders: list[str], forget: bool = True) -> None:
    """After a judgement: `seen` holds the workspace of the run that held `folders`
    (empty: none did). `forget`: whether a missing run clears the marks of `folders`
    (False where only one person's runs were looked for). Best effort: a home that
    cannot be written keeps no mark, and the store says the rest."""
    try:
        if seen:
            mark = _mark(home, seen[0])
            if not os.path.exists(mark):
                os.makedirs(os.path.dirname(mark), exist_ok=True)
                with open(mark, "w", encoding="utf-8") as file:
                    file.write(os.path.normpath(seen[0]) + "\n")
            return
        if not forget or not os.path.isdir(os.path.join(home, FOLDER)):
            return
        for folder in folders:
            for each in _ancestors(folder):
                mark = _mark(home, each)
                if os.path.exists(mark):
                    os.unlink(mark)
    except OSError:
        pass


def marked(home: str, folders: list[str]) -> str | None:
    """The workspace holding one of `folders` where a run was last seen active, if any."""
    if not os.path.isdir(os.path.join(home, FOLDER)):
        return None
    for folder in folders:
        for each in _ancestors(folder):
            if os.path.exists(_mark(home, each)):
                return each
    return None
