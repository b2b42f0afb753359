"""Path globs of checks, relative to a workspace, compiled once at load time.

`*` and `?` stand for characters within one folder or file name, `[abc]`, `[a-z]`,
`[!abc]` for one of (or none of) a set, `**` (a whole segment) for any number of
folders, none included. Names starting with a dot are matched like any other.
A glob is written with `/` and stays inside the workspace: no absolute path, no `..`.
A glob with many `*` in one name runs on the linear-time engine (handrail.patterns),
since the names it is matched against are the agent's to choose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from handrail.model.workflow import Glob


@dataclass(frozen=True, slots=True)
class GlobError(Exception):
    message: str
    offset: int  # position in the glob text, 0-based
    escapes: bool = False  # the glob leaves the workspace (absolute, `..`), not merely malformed

    def __str__(self) -> str:
        return self.message


def compile_glob(text: str) -> Glob:
    """The compiled glob, or GlobError saying what is wrong and where."""
    if not text:
        raise GlobError("the glob is empty", 0)
    if text.startswith("/") or re.match(r"[A-Za-z]:", text) or text.startswith("~"):
        raise GlobError(f"`{text}` is an absolute path; write it relative to the workspace", 0, True)
    if "\\" in text:
        raise GlobError("`\\` is not a folder separator here; write `/`", text.index("\\"))
    if "\x00" in text:
        raise GlobError("the glob holds a NUL character", text.index("\x00"))
    segments = text.split("/")
    offset = 0
    out: list[str] = []
    base: list[str] = []
    literal_so_far = True
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "..":
            raise GlobError("`..` leads out of the workspace", offset, True)
        if segment in ("", "."):
            what = "an empty folder name (`//` or a trailing `/`)" if segment == "" else "a `.` segment"
            raise GlobError(f"the glob has {what}", offset)
        if segment == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            literal_so_far = False
        else:
            if "**" in segment:
                at = offset + segment.index("**")
                raise GlobError("`**` stands for folders only as a whole segment, like `a/**/b`", at)
            written, plain = _segment(segment, offset)
            out.append(written + ("" if last else "/"))
            if literal_so_far and plain and not last:
                base.append(segment)
            else:
                literal_so_far = False
        offset += len(segment) + 1
    written = "".join(out)
    stars = max(_stars(segment) for segment in segments)
    if stars <= 1 and segments.count("**") <= 1:
        # one `*` per name and one `**` at most: Python's engine needs time about linear
        # in the path (no two wildcards compete for the same characters), and is many
        # times quicker per call than RE2 through its binding
        fullmatch = re.compile(written).fullmatch
        return Glob(text, lambda path: fullmatch(path) is not None, "/".join(base))
    from handrail.patterns import PatternError, compile_pattern  # the engines load only here

    try:
        regex = compile_pattern(written + r"\Z", anchored=True)
    except PatternError as exc:  # not expected: every part above is escaped or checked
        raise GlobError(f"the glob cannot be compiled: {exc.message}", 0) from None
    match = regex.match
    return Glob(text, lambda path: match(path) is not None, "/".join(base))


def _stars(segment: str) -> int:
    return 0 if segment == "**" else segment.count("*")


def _segment(segment: str, offset: int) -> tuple[str, bool]:
    """(regex for one name, whether it is literal)."""
    out: list[str] = []
    plain = True
    i = 0
    while i < len(segment):
        ch = segment[i]
        if ch == "*":
            out.append("[^/]*")
            plain = False
        elif ch == "?":
            out.append("[^/]")
            plain = False
        elif ch == "[":
            end = i + 1
            if end < len(segment) and segment[end] in "!^":
                end += 1
            if end < len(segment) and segment[end] == "]":
                end += 1  # a `]` right after the opening is a member
            while end < len(segment) and segment[end] != "]":
                end += 1
            if end >= len(segment):
                raise GlobError("`[` opens a set that is never closed with `]`", offset + i)
            inner = segment[i + 1 : end]
            negate = inner[:1] in ("!", "^")
            members = inner[1:] if negate else inner
            if not members:
                raise GlobError("`[]` is an empty set", offset + i)
            body = "".join(
                "-" if c == "-" and 0 < k < len(members) - 1 else re.escape(c) for k, c in enumerate(members)
            )
            try:
                holds_slash = re.fullmatch(f"[{body}]", "/") is not None
            except re.error as exc:
                raise GlobError(f"invalid set `[{inner}]`: {exc.msg}", offset + i) from None
            if holds_slash and not negate:
                raise GlobError(f"the set `[{inner}]` holds `/`, which separates folders", offset + i)
            out.append(f"[^/{body}]" if negate else f"[{body}]")
            plain = False
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out), plain
