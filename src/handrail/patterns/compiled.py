"""Compiled patterns: `compile_pattern` (cached), the `Regex` it returns, which picks
RE2 or the backtracking engine per search, and that engine's time limit, read from the
running request's budget so each `Service` applies its own `regexTimeoutMs`.

A pattern with no repeat and few alternatives (`\b(unit test|end-to-end)\b`) cannot
backtrack for long: on a short text Python's own engine, whose meaning every other
engine here is held to, answers it, at half RE2's cost per call."""

from __future__ import annotations

import importlib
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from handrail.model import budget
from handrail.model.errors import ValidationEngineError
from handrail.patterns.caching import BoundedCache
from handrail.patterns.translate import (
    ANY_NON_ASCII,
    MARK,
    NON_ASCII_WORDS,
    Engine,
    Unsupported,
    write_pattern,
)

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "u": 0, "g": 0, "y": 0}


@dataclass(frozen=True, slots=True)
class PatternError(Exception):
    message: str
    offset: int | None = None  # position inside the pattern, 0-based

    def __str__(self) -> str:
        return self.message


def _bare_search(compiled: Any) -> Callable[[str], Literal[True] | None]:
    """Whether RE2 finds the pattern in a text, asked of its engine directly: the
    wrapper's `search` also works out match offsets in characters, which a yes-or-no
    answer never reads, and that costs several times the search itself (benchmarks)."""
    if compiled is None:
        return lambda text: None
    regexp = getattr(compiled, "_regexp", None)
    anchor = getattr(getattr(sys.modules.get("re2"), "_Anchor", None), "UNANCHORED", None)
    if regexp is None or anchor is None:  # another version of the wrapper: its public API
        return lambda text: True if compiled.search(text) is not None else None
    match = regexp.Match

    def found(text: str) -> Literal[True] | None:
        data = text.encode("utf-8")  # UnicodeEncodeError for lone surrogates, as search raises
        return True if match(anchor, data, 0, len(data))[0][0] != -1 else None

    return found


class RegexTimeout(ValidationEngineError):
    """A search on the backtracking engine ran past its time limit."""


def flag_bits(flags: str) -> int:
    bits = 0
    for ch in flags:
        if ch not in _FLAGS:
            raise PatternError(f"unknown regex flag {ch!r} (use i, m, s, u; g and y are ignored)")
        bits |= _FLAGS[ch]
    if len(set(flags)) != len(flags):
        raise PatternError(f"regex flag repeated in {flags!r}")
    return bits


# -- the time limit of the backtracking engine ---------------------------------------


def timeout_ms() -> int:
    """The time limit of one search on the backtracking engine: the running request's
    (`regexTimeoutMs` of its service, see model/budget.py), else `limits.REGEX_TIMEOUT_MS`."""
    return budget.regex_ms()


# -- compiled patterns ---------------------------------------------------------------


class Regex:
    """A compiled pattern. `search(text)` is True when the pattern occurs in `text`,
    else None (so `search(text) is not None` reads as it does with `re`)."""

    __slots__ = (
        "_backtracking",
        "_marked",
        "_plain",
        "_python",
        "_re2",
        "_re2_found",
        "_regex_source",
        "_surrogate_safe",
        "_word_check",
        "anchored",
        "fallback",
        "flags",
        "pattern",
    )

    def __init__(
        self,
        pattern: str,
        flags: int,
        python: re.Pattern[str],
        re2: Any,
        fallback: str | None,
        word_check: int,
        surrogate_safe: bool,
        regex_source: str | None,
        anchored: bool,
        marked: Any = None,
    ) -> None:
        self.pattern = pattern
        self.flags = flags
        self.fallback = fallback  # why every search runs on the backtracking engine, or None
        self.anchored = anchored
        self._python = python
        self._re2 = re2
        self._re2_found = _bare_search(re2)
        self._word_check = word_check
        self._plain = short_and_plain(pattern)
        self._surrogate_safe = surrogate_safe
        self._regex_source = regex_source
        self._marked = marked  # RE2, for texts with their Python word boundaries marked
        self._backtracking: Any = None
        if re2 is None:
            self._backtracking = self._compile_backtracking()

    @property
    def engine(self) -> Engine:
        return "re2" if self._re2 is not None else "regex"

    def search(self, text: str) -> Literal[True] | None:
        if not text or (self._plain and len(text) <= SHORT_TEXT):
            # nothing, or little, to backtrack over: Python's answer, quirks included
            found = (self._python.match if self.anchored else self._python.search)(text)
            return True if found is not None else None
        compiled, searched = self._re2, text
        if compiled is not None and self._word_check and self._needs_python_words(text):
            compiled = None
            if self._marked is not None and MARK not in text:
                # Python's \b, found by Python in linear time, marked in the text for RE2
                compiled, searched = self._marked, _PYTHON_BOUNDARY.sub(MARK, text)
        if compiled is not None:
            try:
                if compiled is self._re2:
                    return self._re2_found(searched)
                return True if compiled.search(searched) is not None else None
            except UnicodeEncodeError:  # lone surrogates, which UTF-8 cannot carry
                if self._surrogate_safe:
                    replaced = _LONE_SURROGATE.sub("\uffff", searched)
                    return True if compiled.search(replaced) is not None else None
        return self._search_backtracking(text)

    def _needs_python_words(self, text: str) -> bool:
        """Whether RE2's ASCII \\b or \\B could answer differently from Python's here."""
        if text.isascii():
            return False
        return self._word_check == ANY_NON_ASCII or _NON_ASCII_WORD.search(text) is not None

    def match(self, text: str) -> Literal[True] | None:
        """Like `re.Pattern.match`: only at the start of `text` (for an anchored Regex)."""
        if not self.anchored:
            raise ValueError("match() needs a Regex compiled with anchored=True")
        return self.search(text)

    def _compile_backtracking(self) -> Any:
        regex: Any = importlib.import_module("regex")  # (no type stubs)
        if self._regex_source is None:
            self._regex_source = write_pattern(self.pattern, self.flags, "regex", self.anchored).text
        # \w, \d, \s and \b are written out as Python's sets; ASCII still narrows case folding
        extra = regex.ASCII if self.flags & re.ASCII else 0
        return regex.compile(self._regex_source, regex.VERSION0 | extra)

    def _search_backtracking(self, text: str) -> Literal[True] | None:
        compiled = self._backtracking
        if compiled is None:
            with _LOCK:
                compiled = self._backtracking = self._backtracking or self._compile_backtracking()
        limit = budget.regex_ms()
        left = budget.remaining()  # the whole request's time, not only this search's
        seconds = limit / 1000 if left is None else min(limit / 1000, left)
        try:
            if seconds <= 0:
                raise TimeoutError
            found = compiled.search(text, timeout=seconds, concurrent=True)
        except TimeoutError:
            spent = budget.current()
            if spent is not None and seconds < limit / 1000:
                raise budget.over_time(spent) from None
            raise RegexTimeout(
                data={
                    "details": f"the pattern /{self.pattern}/ was cut off after {limit} ms on this text",
                    "limit": "regexTimeoutMs",
                    "value": limit,
                }
            ) from None
        return True if found is not None else None

    def __repr__(self) -> str:
        return f"Regex({self.pattern!r}, engine={self.engine!r})"


_LOCK = threading.Lock()
SHORT_TEXT = 256  # characters: below this, a call costs more than the scan (benchmarks)
_ESCAPE = re.compile(r"\\.", re.DOTALL)


def short_and_plain(pattern: str) -> bool:
    """Whether Python's engine may search a short text with `pattern` in bounded time:
    no repeat of any kind (`*`, `+`, `?`, `{m,n}`, also where they would be literal,
    inside a class) and at most 4 `|`, so a search tries at most 2^4 paths through
    the pattern at each of the text's SHORT_TEXT places."""
    bare = _ESCAPE.sub("", pattern).replace("(?", "")
    return len(pattern) <= 200 and bare.count("|") <= 4 and not any(c in bare for c in "*+?{")


_NON_ASCII_WORD = re.compile(r"[^\W\x00-\x7f]")  # one character class: linear
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_PYTHON_BOUNDARY = re.compile(r"\b")
_cache: BoundedCache[tuple[str, str | int, bool], Regex] = BoundedCache(4096)  # far more than a catalog holds


def compile_pattern(pattern: str, flags: str | int = "", *, anchored: bool = False) -> Regex:
    """Compile once; identical (pattern, flags) pairs share one compiled object.
    `flags` are the letters a workflow writes, or `re` flag bits."""
    key = (pattern, flags, anchored)
    found = _cache.get(key)
    if found is not None:
        return found
    bits = flag_bits(flags) if isinstance(flags, str) else flags
    try:
        python = re.compile(pattern, bits)
    except re.error as exc:
        raise PatternError(exc.msg, exc.pos) from None
    except (OverflowError, RecursionError, ValueError, MemoryError) as exc:
        raise PatternError(_plain(exc)) from None
    compiled = _build(pattern, python.flags, python, anchored)
    _cache.put(key, compiled)
    return compiled


def _plain(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "the pattern is nested too deeply"
    return str(exc) or type(exc).__name__


def _build(pattern: str, bits: int, python: re.Pattern[str], anchored: bool) -> Regex:
    try:
        written = write_pattern(pattern, bits, "re2", anchored)
    except Unsupported as exc:
        return _backtracking(pattern, bits, python, str(exc), anchored)
    except RecursionError:
        raise PatternError("the pattern is nested too deeply") from None
    except Exception as exc:  # a construct this module does not know: safe, if not linear
        reason = f"it uses what cannot be written for RE2 ({type(exc).__name__}: {exc})"
        return _backtracking(pattern, bits, python, reason, anchored)
    import re2  # lazy: RE2 loads with the first pattern compiled

    try:
        compiled = re2.compile(written.text, _re2_options())
    except re2.error as exc:
        raw = exc.args[0] if exc.args else exc
        reason = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        return _backtracking(pattern, bits, python, f"RE2 refuses it ({reason})", anchored)
    return Regex(
        pattern,
        bits,
        python,
        compiled,
        None,
        written.word_check,
        written.surrogate_safe,
        None,
        anchored,
        _marked(pattern, bits, anchored) if written.word_check == NON_ASCII_WORDS else None,
    )


def _marked(pattern: str, bits: int, anchored: bool) -> Any:
    """RE2 for the pattern with each undecided `\b` written as the mark `Regex.search`
    puts at Python's word boundaries (every character class leaves the mark out, and
    an optional one is taken before each character); None when it cannot be written."""
    import re2  # lazy: RE2 loads with the first pattern compiled

    try:
        written = write_pattern(pattern, bits, "re2", anchored, marked=True)
        return re2.compile(written.text, _re2_options())
    except Exception:  # \B, ASCII-only \b, or what RE2 refuses: searched as before
        return None


def _backtracking(pattern: str, bits: int, python: re.Pattern[str], reason: str, anchored: bool) -> Regex:
    try:
        written = write_pattern(pattern, bits, "regex", anchored)
        return Regex(pattern, bits, python, None, reason, False, False, written.text, anchored)
    except RecursionError:
        raise PatternError("the pattern is nested too deeply") from None
    except Exception as exc:  # the backtracking engine cannot take it either: refuse
        raise PatternError(f"this pattern cannot be run safely: {reason}; {_plain(exc)}") from None


@cache
def _re2_options() -> Any:
    import re2  # lazy: RE2 loads with the first pattern compiled

    options = re2.Options()
    options.log_errors = False  # RE2 would print parse errors on stderr
    options.never_capture = True  # only "is it there" is asked
    return options
