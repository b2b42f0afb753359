"""Colour for a person at a terminal: a diagnostic's severity in red or yellow. Never
in a pipe or a file (a script, an editor, CI reads plain text), never under
`NO_COLOR` set to anything (no-color.org) or `TERM=dumb`. Loaded only by the commands
that print diagnostics."""

from __future__ import annotations

import os
from typing import TextIO

CODES = {"error": "31", "warning": "33"}  # red, yellow


def wanted(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


def severity(line: str, word: str, stream: TextIO) -> str:
    """A rendered diagnostic (`FILE:L:C: error H001 ...`) with its severity coloured
    when `stream` is a terminal that wants colour; else the line as it is."""
    code = CODES.get(word)
    if code is None or not wanted(stream):
        return line
    return line.replace(f": {word} ", f": \033[{code}m{word}\033[0m ", 1)
