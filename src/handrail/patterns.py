"""Regular expressions as workflow files write them: JavaScript-style flags, Python syntax.

Every regex in a workflow (validation rules, the `matches` operator, and the
`pattern`s of JSON Schemas in schema rules) is compiled here, once, at load time.

They run on text the server does not trust (an agent's output, a client's context),
so a search must not take time exponential, or even quadratic, in that text:

* Python's own parser reads the pattern (so the syntax, the error messages and the
  meaning are Python's `re`), and the parse tree is written out again for **RE2**,
  which searches in time linear in the text. `\\d`, `\\w` and `\\s` are written as the
  exact character sets Python uses; `$` keeps Python's "or before a final newline".
* What RE2 cannot do (lookaround, backreferences, atomic groups, possessive repeats,
  conditionals) runs on the **`regex` module**, a backtracking engine, from the same
  parse tree, with a time limit on every search: past it the search raises
  `RegexTimeout` rather than answering. `fallback` says why a pattern is there, and
  `handrail check` reports it (H406).
* Python's `\\b` is a Unicode word boundary, RE2's an ASCII one. Where the pattern
  shows whether the characters beside a `\\b` are word characters, the boundary is
  written without `\\b`; otherwise RE2 answers for texts whose only word characters
  are ASCII (where both mean the same), and the `regex` module for the others.
"""

from __future__ import annotations

import bisect
import importlib
import re
import sys
import threading
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any, Literal

from handrail import budget
from handrail.caching import BoundedCache
from handrail.errors import ValidationEngineError
from handrail.internals import is_format_pattern, sre_constants, sre_parse

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "u": 0, "g": 0, "y": 0}

_P, _C = sre_parse, sre_constants  # Python's own pattern parser: see handrail.internals

_I, _M, _S, _A = re.IGNORECASE, re.MULTILINE, re.DOTALL, re.ASCII
MAX_CODE_POINT = 0x10FFFF
_SURROGATES = (0xD800, 0xDFFF)
_RE2_MAX_REPEAT = 1000

Ranges = tuple[tuple[int, int], ...]


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
    (`regexTimeoutMs` of its service, see budget.py), else `limits.REGEX_TIMEOUT_MS`."""
    return budget.regex_ms()


# -- compiled patterns ---------------------------------------------------------------

Engine = Literal["re2", "regex"]


class Regex:
    """A compiled pattern. `search(text)` is True when the pattern occurs in `text`,
    else None (so `search(text) is not None` reads as it does with `re`)."""

    __slots__ = (
        "_backtracking",
        "_marked",
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
        if not text:  # nothing to backtrack over; Python's answer, quirks included
            found = (self._python.match if self.anchored else self._python.search)(text)
            return True if found is not None else None
        compiled, searched = self._re2, text
        if compiled is not None and self._word_check and self._needs_python_words(text):
            compiled = None
            if self._marked is not None and _MARK not in text:
                # Python's \b, found by Python in linear time, marked in the text for RE2
                compiled, searched = self._marked, _PYTHON_BOUNDARY.sub(_MARK, text)
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
        return self._word_check == _ANY_NON_ASCII or _NON_ASCII_WORD.search(text) is not None

    def match(self, text: str) -> Literal[True] | None:
        """Like `re.Pattern.match`: only at the start of `text` (for an anchored Regex)."""
        if not self.anchored:
            raise ValueError("match() needs a Regex compiled with anchored=True")
        return self.search(text)

    def _compile_backtracking(self) -> Any:
        regex: Any = importlib.import_module("regex")  # (no type stubs)
        if self._regex_source is None:
            self._regex_source = _write(self.pattern, self.flags, "regex", self.anchored).text
        # \w, \d, \s and \b are written out as Python's sets; ASCII still narrows case folding
        extra = regex.ASCII if self.flags & _A else 0
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
_NON_ASCII_WORDS, _ANY_NON_ASCII = 1, 2  # when a search leaves RE2 for Python's \b and \B
_NON_ASCII_WORD = re.compile(r"[^\W\x00-\x7f]")  # one character class: linear
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# A noncharacter, never in text an agent writes (a text holding it is searched the slow
# way): put where Python's Unicode \b holds, it lets RE2 answer \b exactly
_MARK = "\ufdd0"
_MARK_CODE = ord(_MARK)
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
        written = _write(pattern, bits, "re2", anchored)
    except _Unsupported as exc:
        return _backtracking(pattern, bits, python, str(exc), anchored)
    except RecursionError:
        raise PatternError("the pattern is nested too deeply") from None
    except Exception as exc:  # a construct this module does not know: safe, if not linear
        reason = f"it uses what cannot be written for RE2 ({type(exc).__name__}: {exc})"
        return _backtracking(pattern, bits, python, reason, anchored)
    import re2

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
        _marked(pattern, bits, anchored) if written.word_check == _NON_ASCII_WORDS else None,
    )


def _marked(pattern: str, bits: int, anchored: bool) -> Any:
    """RE2 for the pattern with each undecided `\b` written as the mark `Regex.search`
    puts at Python's word boundaries (every character class leaves the mark out, and
    an optional one is taken before each character); None when it cannot be written."""
    import re2

    try:
        written = _write(pattern, bits, "re2", anchored, marked=True)
        return re2.compile(written.text, _re2_options())
    except Exception:  # \B, ASCII-only \b, or what RE2 refuses: searched as before
        return None


def _backtracking(pattern: str, bits: int, python: re.Pattern[str], reason: str, anchored: bool) -> Regex:
    try:
        written = _write(pattern, bits, "regex", anchored)
        return Regex(pattern, bits, python, None, reason, False, False, written.text, anchored)
    except RecursionError:
        raise PatternError("the pattern is nested too deeply") from None
    except Exception as exc:  # the backtracking engine cannot take it either: refuse
        raise PatternError(f"this pattern cannot be run safely: {reason}; {_plain(exc)}") from None


@cache
def _re2_options() -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 would print parse errors on stderr
    options.never_capture = True  # only "is it there" is asked
    return options


def harden(patterns: MutableMapping[str, Any]) -> list[tuple[str, str]]:
    """Swap the compiled `re` patterns of a fastjsonschema validator (its REGEX_PATTERNS)
    for linear-time ones, in place. Returns (pattern, reason) for those that fall back."""
    fallbacks: list[tuple[str, str]] = []
    for name, compiled in list(patterns.items()):
        if not isinstance(compiled, re.Pattern):
            continue
        # `pattern` and patternProperties call .search; formats call .match
        anchored = is_format_pattern(name)
        hardened = compile_pattern(compiled.pattern, compiled.flags, anchored=anchored)
        patterns[name] = _Matcher(hardened)
        if hardened.fallback is not None:
            fallbacks.append((name, hardened.fallback))
    return fallbacks


class _Matcher:
    """What fastjsonschema's generated code calls: `.search(text)` and `.match(text)`."""

    __slots__ = ("match", "pattern", "search")

    def __init__(self, compiled: Regex) -> None:
        self.pattern = compiled.pattern
        self.search: Callable[[str], Literal[True] | None] = compiled.search
        # only formats call .match, and their patterns are compiled anchored
        self.match: Callable[[str], Literal[True] | None] = compiled.match


# -- Python's character classes, exactly -----------------------------------------------

# Python's \w, \d and \s hold no character above U+3FFFF (planes 4 to 13 are
# unassigned; 14 holds format characters and variation selectors, 15 and 16 private
# use), so the scan stops there; a test checks this against a scan of every plane.
_SCAN_END = 0x40000


def category(name: str) -> Ranges:
    """The code points Python's `\\w`, `\\d` or `\\s` (Unicode) match, as sorted ranges."""
    return _tables()[name]


@cache
def _tables() -> dict[str, Ranges]:
    text = _code_points(_SCAN_END)  # built once for the three (about 30 ms in all)
    return {name: _runs(pattern, text) for name, pattern in _CLASSES.items()}


_CLASSES = {"w": r"\w+", "d": r"\d+", "s": r"\s+"}


def _scan(pattern: str, end: int) -> Ranges:
    return _runs(pattern, _code_points(end))


def _code_points(end: int) -> str:
    """Every code point below `end` but the surrogates, in order."""
    import array
    import sys

    points = array.array("I", range(_SURROGATES[0]))
    points.extend(range(_SURROGATES[1] + 1, end))
    return points.tobytes().decode("utf-32-le" if sys.byteorder == "little" else "utf-32-be")


def _runs(pattern: str, text: str) -> Ranges:
    gap = _SURROGATES[1] - _SURROGATES[0] + 1
    out: list[tuple[int, int]] = []
    for found in re.finditer(pattern, text):
        first, last = found.start(), found.end() - 1
        lo = first if first < _SURROGATES[0] else first + gap
        hi = last if last < _SURROGATES[0] else last + gap
        if lo < _SURROGATES[0] < hi:
            out.extend(((lo, _SURROGATES[0] - 1), (_SURROGATES[1] + 1, hi)))
        else:
            out.append((lo, hi))
    return tuple(out)


_ASCII_CATEGORIES: dict[str, Ranges] = {
    "w": ((48, 57), (65, 90), (95, 95), (97, 122)),
    "d": ((48, 57),),
    "s": ((9, 13), (32, 32)),
}


def _union(*sets: Iterable[tuple[int, int]]) -> Ranges:
    items = sorted(r for s in sets for r in s)
    out: list[tuple[int, int]] = []
    for lo, hi in items:
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def _complement(ranges: Ranges) -> Ranges:
    """Every code point not in `ranges`, surrogates left out (no text that reaches RE2
    holds one; see `Regex.search`)."""
    out: list[tuple[int, int]] = []
    start = 0
    for lo, hi in ranges:
        if lo > start:
            out.append((start, lo - 1))
        start = max(start, hi + 1)
    if start <= MAX_CODE_POINT:
        out.append((start, MAX_CODE_POINT))
    return _without_surrogates(out)


def _without_surrogates(ranges: Iterable[tuple[int, int]]) -> Ranges:
    out: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if hi < _SURROGATES[0] or lo > _SURROGATES[1]:
            out.append((lo, hi))
            continue
        if lo < _SURROGATES[0]:
            out.append((lo, _SURROGATES[0] - 1))
        if hi > _SURROGATES[1]:
            out.append((_SURROGATES[1] + 1, hi))
    return tuple(out)


@lru_cache(maxsize=8)
def _starts(ranges: Ranges) -> list[int]:
    return [lo for lo, _ in ranges]


def _kinds(ranges: Ranges, words: Ranges) -> frozenset[str]:
    """Whether the characters of `ranges` are word characters ("w"), others ("n"), or both."""
    starts = _starts(words)
    kinds: set[str] = set()
    for lo, hi in ranges:
        i = bisect.bisect_right(starts, lo) - 1
        inside = i >= 0 and words[i][0] <= lo and hi <= words[i][1]
        if inside:
            kinds.add("w")
            continue
        # not wholly inside one word range: is any of it a word character?
        j = bisect.bisect_right(starts, hi) - 1
        touches = any(max(lo, wlo) <= min(hi, whi) for wlo, whi in words[max(i, 0) : j + 1])
        kinds.add("n")
        if touches:
            kinds.add("w")
    return frozenset(kinds)


# -- writing the parse tree out again -------------------------------------------------


class _Unsupported(Exception):
    """Why RE2 cannot run the pattern."""


@dataclass(slots=True)
class _Written:
    text: str
    word_check: int  # 0, or when RE2's ASCII \b or \B differs from Python's (see Regex.search)
    surrogate_safe: bool  # lone surrogates in a text may be searched as U+FFFF


def _write(pattern: str, bits: int, dialect: Engine, anchored: bool, *, marked: bool = False) -> _Written:
    tree = _P.parse(pattern, bits)
    writer = _Writer(dialect, marked=marked)
    flags = int(tree.state.flags)
    items = list(tree.data)
    if dialect == "re2" and _lone_negative_lookaheads(items):
        # (?!X) alone is found at the end of any text when X needs a character:
        # WorkRail's `(?!.*TODO)` is such a pattern
        body = ""
    else:
        body = writer.sequence(items, flags, lead=not anchored, tail=True, bare=True)
    if flags & _I:
        body = f"(?i:{body})"
    if anchored:
        body = r"\A" + body if dialect == "re2" else r"\A(?:" + body + ")"
    return _Written(body, writer.word_check, writer.surrogate_safe)


def _lone_negative_lookaheads(items: list[Any]) -> bool:
    return bool(items) and all(
        op is _C.ASSERT_NOT and av[0] == 1 and av[1].getwidth()[0] > 0 for op, av in items
    )


# Ignoring case, Python's `re` takes I, i, İ and ı for one another; RE2 and `regex`
# fold by Unicode's case folding, which keeps the dotted İ and the dotless ı apart
_TURKISH_I = frozenset({0x49, 0x69, 0x130, 0x131})
_TURKISH_I_RANGES: Ranges = ((0x49, 0x49), (0x69, 0x69), (0x130, 0x131))


class _Writer:
    def __init__(self, dialect: Engine, *, marked: bool = False) -> None:
        self.re2 = dialect == "re2"
        self.marked = marked  # see `_marked`
        self.mark = _escape(_MARK_CODE, True)
        self.word_check = 0
        self.surrogate_safe = True

    # sequences ---------------------------------------------------------------------
    def sequence(self, items: Sequence[Any], flags: int, *, lead: bool, tail: bool, bare: bool) -> str:
        if self.re2 and flags & _A and flags & _I:
            raise _Unsupported("it ignores case in ASCII only, (?a) with ignore-case")
        parts = []
        for i, (op, av) in enumerate(items):
            rest = items[i + 1 :]
            item_lead = lead and i == 0
            item_tail = tail and all(o is _C.AT and a is _C.AT_END for o, a in rest)
            item_bare = bare and not rest
            if op is _C.AT and av in (_C.AT_BOUNDARY, _C.AT_NON_BOUNDARY):
                parts.append(self.boundary(items, i, flags, item_lead, item_bare, av is _C.AT_NON_BOUNDARY))
            else:
                parts.append(self.node(op, av, flags, lead=item_lead, tail=item_tail, bare=item_bare))
        return "".join(parts)

    def node(self, op: Any, av: Any, flags: int, *, lead: bool, tail: bool, bare: bool) -> str:
        if op is _C.LITERAL:
            if flags & _I and not flags & _A and av in _TURKISH_I:
                return self.chars(_TURKISH_I_RANGES, negate=False)
            return self.literal(av)
        if op is _C.NOT_LITERAL:
            if flags & _I and not flags & _A and av in _TURKISH_I:
                return self.chars(_TURKISH_I_RANGES, negate=True)
            return self.chars(((av, av),), negate=True)
        if op is _C.ANY:
            if self.marked:
                return self.chars(((10, 10),) if not flags & _S else (), negate=True, fold=False, user=False)
            return "(?s:.)" if flags & _S else r"[^\n]"
        if op is _C.IN:
            return self.klass(av, flags)
        if op is _C.BRANCH:
            alternatives = [self.sequence(list(p), flags, lead=lead, tail=tail, bare=bare) for p in av[1]]
            return "(?:" + "|".join(alternatives) + ")"
        if op is _C.SUBPATTERN:
            group, add, remove, sub = av
            inner_flags = (flags | add) & ~remove
            inner = self.sequence(list(sub), inner_flags, lead=lead, tail=tail, bare=bare)
            if (inner_flags & _I) != (flags & _I):
                inner = f"(?{'i' if inner_flags & _I else '-i'}:{inner})"
            if group is not None and not self.re2:
                return f"({inner})"  # numbered as Python numbers it, for backreferences
            return f"(?:{inner})"
        if op in (_C.MAX_REPEAT, _C.MIN_REPEAT, _C.POSSESSIVE_REPEAT):
            return self.repeat(op, av, flags, lead=lead, tail=tail, bare=bare)
        if op is _C.AT:
            return self.at(av, flags, tail)
        if self.re2:
            if op in (_C.ASSERT, _C.ASSERT_NOT):
                negative, behind = op is _C.ASSERT_NOT, av[0] == -1
                kind = f"{'negative ' if negative else ''}look{'behind' if behind else 'ahead'}"
                opener = "(?" + ("<" if behind else "") + ("!" if negative else "=")
                raise _Unsupported(f"it uses a {kind} {opener}...)")
            raise _Unsupported(_UNSUPPORTED.get(str(op), f"it uses {op}"))
        return self.backtracking_only(op, av, flags)

    def repeat(self, op: Any, av: Any, flags: int, *, lead: bool, tail: bool, bare: bool) -> str:
        lo, hi, sub = av
        once = hi != _C.MAXREPEAT and hi <= 1  # the item is not repeated: what follows it stays
        inner = self.sequence(list(sub), flags, lead=lead and once, tail=tail and once, bare=bare and once)
        if self.re2 and op is _C.POSSESSIVE_REPEAT:
            raise _Unsupported("it uses a possessive quantifier")
        if self.re2 and (lo > _RE2_MAX_REPEAT or (hi != _C.MAXREPEAT and hi > _RE2_MAX_REPEAT)):
            raise _Unsupported(f"a repeat count above {_RE2_MAX_REPEAT}")
        if hi == _C.MAXREPEAT:
            count = {0: "*", 1: "+"}.get(lo, f"{{{lo},}}")
        elif lo == hi:
            count = f"{{{lo}}}"
        elif (lo, hi) == (0, 1):
            count = "?"
        else:
            count = f"{{{lo},{hi}}}"
        suffix = {_C.MIN_REPEAT: "?", _C.POSSESSIVE_REPEAT: "+"}.get(op, "")
        return f"(?:{inner}){count}{suffix}"

    def at(self, where: Any, flags: int, tail: bool) -> str:
        written = self._at(where, flags, tail)
        if self.marked and where in (_C.AT_END, _C.AT_END_STRING):
            return f"{self.mark}?{written}"  # a word character ends the text: a mark follows it
        return written

    def _at(self, where: Any, flags: int, tail: bool) -> str:
        if where is _C.AT_BEGINNING:
            return "(?m:^)" if flags & _M else r"\A"
        if where is _C.AT_BEGINNING_STRING:
            return r"\A"
        if where is _C.AT_END:
            if flags & _M:
                return "(?m:$)"
            if not self.re2:
                return "(?-m:$)"
            if not tail:
                # Python's $ also holds before a final newline; written for RE2 it
                # takes that newline, which only works when nothing comes after it
                raise _Unsupported("`$` is followed by more of the pattern")
            return rf"(?:\n?{self.mark}?\z)" if self.marked else r"(?:\n?\z)"
        if where is _C.AT_END_STRING:
            return r"\z" if self.re2 else r"\Z"
        raise _Unsupported(f"it uses {where}")

    def backtracking_only(self, op: Any, av: Any, flags: int) -> str:
        if op is _C.GROUPREF:
            return f"(?:\\{av})"
        if op is _C.GROUPREF_EXISTS:
            group, yes, no = av
            inner = self.sequence(list(yes), flags, lead=False, tail=False, bare=False)
            if no is not None:
                inner += "|" + self.sequence(list(no), flags, lead=False, tail=False, bare=False)
            return f"(?({group}){inner})"
        if op in (_C.ASSERT, _C.ASSERT_NOT):
            direction, sub = av
            inner = self.sequence(list(sub), flags, lead=False, tail=False, bare=False)
            opener = {(_C.ASSERT, 1): "?=", (_C.ASSERT, -1): "?<=", (_C.ASSERT_NOT, 1): "?!"}
            return f"({opener.get((op, direction), '?<!')}{inner})"
        if op is _C.ATOMIC_GROUP:
            return "(?>" + self.sequence(list(av), flags, lead=False, tail=False, bare=False) + ")"
        raise ValueError(f"cannot write {op}")

    # word boundaries ----------------------------------------------------------------
    def boundary(
        self, items: Sequence[Any], i: int, flags: int, lead: bool, bare: bool, negated: bool
    ) -> str:
        if flags & _A:  # ASCII word characters: RE2's \b is Python's
            if self.marked:
                raise _Unsupported("the marks are Unicode boundaries")
            if self.re2:
                if negated:
                    self.word_check = _ANY_NON_ASCII
                return r"\B" if negated else r"\b"
            words = _ASCII_CATEGORIES["w"]
        else:
            words = category("w")
        if not self.re2:
            w = self.chars(words, negate=False, fold=False, user=False)
            at_edge = f"(?<={w})(?!{w})|(?<!{w})(?={w})"
            inside = f"(?<={w})(?={w})|(?<!{w})(?!{w})"
            return f"(?:{inside if negated else at_edge})"
        before, before_empty = _edge(items[:i], words, from_end=True)
        after, after_empty = _edge(items[i + 1 :], words, from_end=False)
        word = self.chars(words, negate=False, fold=False, user=False)
        other = self.chars(words, negate=True, fold=False, user=False)
        if not before_empty and not after_empty and len(before) == 1 and len(after) == 1:
            holds = before != after
            return "" if holds != negated else r"\b\B"  # \b\B never holds
        if lead and not after_empty and len(after) == 1:
            # nothing of the match comes before: the character before may be taken
            wants_word = ("w" in after) == negated
            return word if wants_word else rf"(?:\A|{other})"
        if bare and not before_empty and len(before) == 1:
            # nothing of the match comes after: the character after may be taken
            wants_word = ("w" in before) == negated
            return word if wants_word else rf"(?:{other}|\z)"
        if self.marked:
            if negated:
                raise _Unsupported("\\B is not marked")
            return self.mark  # Regex.search marks where Python's \b holds
        # RE2's \B also holds between the bytes of one character, so it is trusted only
        # on ASCII text; its \b on text whose word characters are all ASCII
        self.word_check = max(self.word_check, _ANY_NON_ASCII if negated else _NON_ASCII_WORDS)
        return r"\B" if negated else r"\b"

    # characters ---------------------------------------------------------------------
    def literal(self, code: int) -> str:
        if self.re2 and _SURROGATES[0] <= code <= _SURROGATES[1]:
            raise _Unsupported("it holds a lone surrogate")
        if code == 0xFFFF:
            self.surrogate_safe = False
        if self.marked:
            return f"{self.mark}?{_escape(code, self.re2)}"
        return _escape(code, self.re2)

    def klass(self, items: Sequence[Any], flags: int) -> str:
        negate = False
        chars: list[tuple[int, int]] = []
        categories: list[Ranges] = []
        for op, av in items:
            if op is _C.NEGATE:
                negate = True
            elif op is _C.LITERAL:
                chars.append((av, av))
            elif op is _C.RANGE:
                chars.append(av)
            elif op is _C.CATEGORY:
                categories.append(_category_ranges(av, flags))
            else:
                raise _Unsupported(f"it uses {op} in a character class")
        if flags & _I and not flags & _A and any(lo <= c <= hi for lo, hi in chars for c in _TURKISH_I):
            chars.extend(_TURKISH_I_RANGES)
        if not categories:
            return self.chars(tuple(chars), negate=negate)
        fold = bool(flags & _I)
        self._check_special(chars)
        if not fold or not chars:
            # \w, \d and \s hold whole case pairs, so case folding cannot change them
            every = _union(chars, *categories)
            every = _complement(every) if negate else _without_surrogates(every)
            return self.chars(every, False, fold=False, user=False)
        listed = self.chars(tuple(chars), False)
        positive = f"(?:{listed}|{self.chars(_union(*categories), False, fold=False, user=False)})"
        if not negate:
            return positive
        if self.re2:
            raise _Unsupported("a negated class mixing \\w, \\d or \\s with other characters, ignoring case")
        return f"(?:(?!{positive})(?s:.))"

    def chars(self, ranges: Ranges, negate: bool, *, fold: bool = True, user: bool = True) -> str:
        """A class of `ranges`; `fold=False` keeps it out of case folding, `user=False`
        for the sets written here (\\w and the like), which need no surrogate check."""
        if user:
            self._check_special(ranges)
            if self.re2 and ranges and not _without_surrogates(ranges):
                raise _Unsupported("it holds a lone surrogate")
        if self.marked:  # no class takes the mark, and a mark may come before any character
            ranges = _union(ranges, ((_MARK_CODE, _MARK_CODE),)) if negate else _minus_mark(ranges)
        text = _class_text(ranges, negate, self.re2)
        text = text if fold else f"(?-i:{text})"
        return f"{self.mark}?{text}" if self.marked else text

    def _check_special(self, ranges: Iterable[tuple[int, int]]) -> None:
        """A text's lone surrogates are searched as U+FFFF only while every class treats
        U+FFFF as it treats them all (see `Regex.search`)."""
        for lo, hi in ranges:
            has_all = lo <= _SURROGATES[0] and hi >= 0xFFFF
            has_none = hi < _SURROGATES[0] or lo > 0xFFFF or (lo > _SURROGATES[1] and hi < 0xFFFF)
            if not (has_all or has_none):
                self.surrogate_safe = False


def _minus_mark(ranges: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if lo <= _MARK_CODE <= hi:
            out.extend(r for r in ((lo, _MARK_CODE - 1), (_MARK_CODE + 1, hi)) if r[0] <= r[1])
        else:
            out.append((lo, hi))
    return tuple(out)


@lru_cache(maxsize=512)
def _class_text(ranges: Ranges, negate: bool, re2: bool) -> str:
    if re2:
        ranges = _without_surrogates(ranges)
    if not ranges:
        return "(?s:.)" if negate else r"\b\B"  # \b\B never holds
    body = "".join(
        _escape(lo, re2) if lo == hi else f"{_escape(lo, re2)}-{_escape(hi, re2)}" for lo, hi in ranges
    )
    return f"[{'^' if negate else ''}{body}]"


def _category_ranges(name: Any, flags: int) -> Ranges:
    return _category_set(name, bool(flags & _A))


@lru_cache(maxsize=16)
def _category_set(name: Any, ascii_only: bool) -> Ranges:
    table = _ASCII_CATEGORIES if ascii_only else None
    key = {
        _C.CATEGORY_DIGIT: ("d", False),
        _C.CATEGORY_NOT_DIGIT: ("d", True),
        _C.CATEGORY_SPACE: ("s", False),
        _C.CATEGORY_NOT_SPACE: ("s", True),
        _C.CATEGORY_WORD: ("w", False),
        _C.CATEGORY_NOT_WORD: ("w", True),
    }.get(name)
    if key is None:
        raise _Unsupported(f"it uses {name}")
    letter, negated = key
    ranges = table[letter] if table is not None else category(letter)
    return _complement(ranges) if negated else ranges


def _edge(items: Sequence[Any], words: Ranges, *, from_end: bool) -> tuple[frozenset[str], bool]:
    """Whether the characters a sequence can start (or end) with are word characters:
    ({"w"}, {"n"} or both, whether the sequence can match nothing)."""
    kinds: set[str] = set()
    for op, av in reversed(items) if from_end else items:
        found, empty = _edge_node(op, av, words, from_end)
        kinds |= found
        if not empty:
            return frozenset(kinds), False
    return frozenset(kinds), True


_BOTH = frozenset({"w", "n"})


def _edge_node(op: Any, av: Any, words: Ranges, from_end: bool) -> tuple[frozenset[str], bool]:
    if op is _C.LITERAL:
        return _kinds(((av, av),), words), False
    if op is _C.IN:
        ranges: list[tuple[int, int]] = []
        for item, value in av:
            if item is _C.LITERAL:
                ranges.append((value, value))
            elif item is _C.RANGE:
                ranges.append(value)
            elif item is _C.CATEGORY and value in (_C.CATEGORY_DIGIT, _C.CATEGORY_WORD):
                ranges.extend(words if value is _C.CATEGORY_WORD else category("d"))
            elif item is _C.CATEGORY and value in (_C.CATEGORY_SPACE, _C.CATEGORY_NOT_WORD):
                ranges.extend(category("s") if value is _C.CATEGORY_SPACE else _complement(words))
            else:  # a negated class or category: could be either
                return _BOTH, False
        return _kinds(tuple(ranges), words), False
    if op in (_C.MAX_REPEAT, _C.MIN_REPEAT, _C.POSSESSIVE_REPEAT):
        lo, hi, sub = av
        if hi == 0:
            return frozenset(), True
        found, empty = _edge(list(sub), words, from_end=from_end)
        return found, empty or lo == 0
    if op is _C.SUBPATTERN:
        return _edge(list(av[3]), words, from_end=from_end)
    if op is _C.BRANCH:
        kinds: set[str] = set()
        any_empty = False
        for alternative in av[1]:
            found, empty = _edge(list(alternative), words, from_end=from_end)
            kinds |= found
            any_empty = any_empty or empty
        return frozenset(kinds), any_empty
    if op is _C.AT:
        return frozenset(), True  # takes no character
    return _BOTH, False  # any character, a negated literal, or what RE2 cannot run anyway


_UNSUPPORTED = {
    "GROUPREF": "it uses a backreference",
    "GROUPREF_EXISTS": "it uses a conditional group (?(1)...)",
    "ATOMIC_GROUP": "it uses an atomic group (?>...)",
}


def _escape(code: int, re2: bool) -> str:
    if code < 128 and chr(code).isalnum():
        return chr(code)
    if re2:
        return f"\\x{{{code:X}}}"
    return f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"
