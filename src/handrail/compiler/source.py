"""Reading a workflow file and locating JSON pointers in it (line, column).

Positions are computed only when there is something to report: a file that
compiles cleanly never pays for its source map.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass
from typing import Any

from handrail.model.codec import decode_exact

KEY = -1  # an `offset` that asks for the position of the object key, not its value


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    message: str
    line: int
    column: int


def parse_json(text: str) -> tuple[Any, SyntaxProblem | None]:
    try:
        return decode_exact(text), None
    except json.JSONDecodeError as exc:
        strict = exc
    try:  # the standard library words syntax errors better, in lines and columns
        json.loads(text)
    except json.JSONDecodeError as exc:
        if not text[exc.pos :].strip():
            return None, SyntaxProblem(
                "invalid JSON: the file ends before the JSON does: it stops inside a value, "
                "or a closing `}` or `]` is missing",
                exc.lineno,
                exc.colno,
            )
        comma = _trailing_comma(text, exc.pos)
        if comma is not None:
            line = text.count("\n", 0, comma) + 1
            column = comma - (text.rfind("\n", 0, comma) + 1) + 1
            closer = "list" if text[exc.pos] == "]" else "object"
            return None, SyntaxProblem(
                f"invalid JSON: a trailing comma: nothing follows this comma in its {closer}, "
                "and JSON allows no comma there; remove it",
                line,
                column,
            )
        return None, SyntaxProblem(f"invalid JSON: {_plain(exc)}", exc.lineno, exc.colno)
    except RecursionError:
        return None, SyntaxProblem("invalid JSON: nested too deeply", 1, 1)
    # The standard library is laxer: it takes NaN, Infinity, lone surrogates and numbers
    # too large for a double, none of which a workflow can hold; orjson says where they are.
    word = re.match(r"-?Infinity|NaN", text[strict.pos :]) if 0 <= strict.pos < len(text) else None
    message = f"{word.group()} is not a JSON value" if word else strict.msg
    if "is infinity" in message:
        message = "the number is too large"
    return None, SyntaxProblem(f"invalid JSON: {message}", strict.lineno, strict.colno)


def _trailing_comma(text: str, pos: int) -> int | None:
    """Where the comma is, when the error is a `]` or `}` right after one."""
    if pos >= len(text) or text[pos] not in "]}":
        return None
    before = len(text[:pos].rstrip())
    return before - 1 if before and text[before - 1] == "," else None


def _plain(exc: json.JSONDecodeError) -> str:
    """The standard library's message in plain words, with the likely cause."""
    ahead = exc.doc[exc.pos : exc.pos + 2]
    if exc.msg.startswith(("Expecting value", "Expecting property name")):
        if ahead.startswith(("//", "/*", "#")):
            return "a comment: JSON has no comments; remove it"
        if ahead.startswith("'"):
            return 'single quotes: JSON strings and keys need double quotes (")'
        word = re.match(r"[A-Za-z_$][A-Za-z0-9_$]*", exc.doc[exc.pos :])
        if word and exc.msg.startswith("Expecting property name"):
            return f'the key `{word.group()}` needs double quotes: "{word.group()}"'
        if word:
            return f'`{word.group()}` is not a JSON value (JSON has true, false, null, numbers, "text")'
        if exc.msg.startswith("Expecting property name"):
            return "expected a key in double quotes"
        return 'expected a value: a "string", a number, an object, a list, true, false or null'
    return next((plain for start, plain in _PLAIN if exc.msg.startswith(start)), exc.msg)


_PLAIN = (  # the standard library's message -> plain words
    ("Expecting ',' delimiter", "a comma is missing before this value"),
    ("Expecting ':' delimiter", "a colon (:) is missing after the key"),
    ("Unterminated string", "a string that never ends: its closing double quote is missing"),
    (
        "Invalid control character",
        "a line break or control character inside a string; write it as \\n or \\t",
    ),
    ("Invalid \\escape", "an invalid escape in a string; a backslash is written \\\\"),
    ("Extra data", "more text after the end of the JSON value"),
)


class SourceMap:
    def __init__(self, text: str) -> None:
        import json_source_map  # lazy: a source map is made only to locate a diagnostic

        self._text = text
        try:
            self._entries: dict[str, Any] = json_source_map.calculate(text)
        except Exception:
            self._entries = {}
        self._line_starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def _line_col(self, position: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._line_starts, position) - 1
        return line + 1, position - self._line_starts[line] + 1

    def locate(self, pointer: str, offset: int | None = None) -> tuple[int, int]:
        """1-based (line, column) of the value at `pointer`, of its key, or of a
        character `offset` inside its string value."""
        probe = pointer
        while probe not in self._entries and probe:
            probe = probe.rsplit("/", 1)[0]
        entry = self._entries.get(probe)
        if entry is None:
            return 1, 1
        if offset == KEY and probe == pointer and entry.key_start is not None:
            return entry.key_start.line + 1, entry.key_start.column + 1
        start = entry.value_start.position
        if offset is not None and offset >= 0 and probe == pointer and self._text[start] == '"':
            return self._line_col(_raw_position(self._text, start, offset))
        return entry.value_start.line + 1, entry.value_start.column + 1


def _raw_position(text: str, quote: int, decoded_offset: int) -> int:
    """Where the `decoded_offset`-th character of the JSON string at `quote` sits in the file."""
    i, seen = quote + 1, 0
    while seen < decoded_offset and i < len(text) and text[i] != '"':
        if text[i] == "\\":
            i += 6 if text[i + 1 : i + 2] == "u" else 2
        else:
            i += 1
        seen += 1
    return i
