"""Writing a pattern's parse tree (Python's own parser, through handrail.internals)
out again: for RE2, which searches in linear time, or for the backtracking `regex`
module, with Python's meaning kept. What RE2 cannot run raises `Unsupported`, naming
why; the word-boundary analysis decides where RE2's ASCII `\\b` may stand for Python's
Unicode one (see the package's docstring)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from handrail.internals import sre_constants, sre_parse
from handrail.patterns.boundaries import anchor_beside_boundary, anchors_in_order, edge
from handrail.patterns.charsets import (
    ASCII_CATEGORIES,
    SURROGATES,
    Ranges,
    category,
    complement,
    union,
    without_surrogates,
)

_P, _C = sre_parse, sre_constants  # Python's own pattern parser: see handrail.internals

_I, _M, _S, _A = re.IGNORECASE, re.MULTILINE, re.DOTALL, re.ASCII
_RE2_MAX_REPEAT = 1000

Engine = Literal["re2", "regex"]

NON_ASCII_WORDS, ANY_NON_ASCII = 1, 2  # when a search leaves RE2 for Python's \b and \B
# A noncharacter, never in text an agent writes (a text holding it is searched the slow
# way): put where Python's Unicode \b holds, it lets RE2 answer \b exactly
MARK = "\ufdd0"
_MARK_CODE = ord(MARK)


class Unsupported(Exception):
    """Why RE2 cannot run the pattern."""


@dataclass(slots=True)
class _Written:
    text: str
    word_check: int  # 0, or when RE2's ASCII \b or \B differs from Python's (see Regex.search)
    surrogate_safe: bool  # lone surrogates in a text may be searched as U+FFFF


def write_pattern(
    pattern: str, bits: int, dialect: Engine, anchored: bool, *, marked: bool = False
) -> _Written:
    tree = _P.parse(pattern, bits)
    writer = _Writer(dialect, marked=marked)
    flags = int(tree.state.flags)
    items = list(tree.data)
    if marked and anchor_beside_boundary(items):
        # a mark lies after the start of a line and before its end: a boundary met
        # before a start anchor, or after an end anchor, through a group, never matches
        raise Unsupported("a word boundary beside an anchor")
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
            raise Unsupported("it ignores case in ASCII only, (?a) with ignore-case")
        items = anchors_in_order(items)
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
                raise Unsupported(f"it uses a {kind} {opener}...)")
            raise Unsupported(_UNSUPPORTED.get(str(op), f"it uses {op}"))
        return self.backtracking_only(op, av, flags)

    def repeat(self, op: Any, av: Any, flags: int, *, lead: bool, tail: bool, bare: bool) -> str:
        lo, hi, sub = av
        once = hi != _C.MAXREPEAT and hi <= 1  # the item is not repeated: what follows it stays
        inner = self.sequence(list(sub), flags, lead=lead and once, tail=tail and once, bare=bare and once)
        if self.re2 and op is _C.POSSESSIVE_REPEAT:
            raise Unsupported("it uses a possessive quantifier")
        if self.re2 and (lo > _RE2_MAX_REPEAT or (hi != _C.MAXREPEAT and hi > _RE2_MAX_REPEAT)):
            raise Unsupported(f"a repeat count above {_RE2_MAX_REPEAT}")
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
                raise Unsupported("`$` is followed by more of the pattern")
            return rf"(?:\n?{self.mark}?\z)" if self.marked else r"(?:\n?\z)"
        if where is _C.AT_END_STRING:
            return r"\z" if self.re2 else r"\Z"
        raise Unsupported(f"it uses {where}")

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
                raise Unsupported("the marks are Unicode boundaries")
            if self.re2:
                if negated:
                    self.word_check = ANY_NON_ASCII
                return r"\B" if negated else r"\b"
            words = ASCII_CATEGORIES["w"]
        else:
            words = category("w")
        if not self.re2:
            w = self.chars(words, negate=False, fold=False, user=False)
            at_edge = f"(?<={w})(?!{w})|(?<!{w})(?={w})"
            inside = f"(?<={w})(?={w})|(?<!{w})(?!{w})"
            return f"(?:{inside if negated else at_edge})"
        before, before_empty = edge(items[:i], words, from_end=True)
        after, after_empty = edge(items[i + 1 :], words, from_end=False)
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
                raise Unsupported("\\B is not marked")
            return self.mark  # Regex.search marks where Python's \b holds
        # RE2's \B also holds between the bytes of one character, so it is trusted only
        # on ASCII text; its \b on text whose word characters are all ASCII
        self.word_check = max(self.word_check, ANY_NON_ASCII if negated else NON_ASCII_WORDS)
        return r"\B" if negated else r"\b"

    # characters ---------------------------------------------------------------------
    def literal(self, code: int) -> str:
        if self.re2 and SURROGATES[0] <= code <= SURROGATES[1]:
            raise Unsupported("it holds a lone surrogate")
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
                raise Unsupported(f"it uses {op} in a character class")
        if flags & _I and not flags & _A and any(lo <= c <= hi for lo, hi in chars for c in _TURKISH_I):
            chars.extend(_TURKISH_I_RANGES)
        if not categories:
            return self.chars(tuple(chars), negate=negate)
        fold = bool(flags & _I)
        self._check_special(chars)
        if not fold or not chars:
            # \w, \d and \s hold whole case pairs, so case folding cannot change them
            every = union(chars, *categories)
            every = complement(every) if negate else without_surrogates(every)
            return self.chars(every, False, fold=False, user=False)
        listed = self.chars(tuple(chars), False)
        positive = f"(?:{listed}|{self.chars(union(*categories), False, fold=False, user=False)})"
        if not negate:
            return positive
        if self.re2:
            raise Unsupported("a negated class mixing \\w, \\d or \\s with other characters, ignoring case")
        return f"(?:(?!{positive})(?s:.))"

    def chars(self, ranges: Ranges, negate: bool, *, fold: bool = True, user: bool = True) -> str:
        """A class of `ranges`; `fold=False` keeps it out of case folding, `user=False`
        for the sets written here (\\w and the like), which need no surrogate check."""
        if user:
            self._check_special(ranges)
            if self.re2 and ranges and not without_surrogates(ranges):
                raise Unsupported("it holds a lone surrogate")
        if self.marked:  # no class takes the mark, and a mark may come before any character
            ranges = union(ranges, ((_MARK_CODE, _MARK_CODE),)) if negate else _minus_mark(ranges)
        text = _class_text(ranges, negate, self.re2)
        text = text if fold else f"(?-i:{text})"
        return f"{self.mark}?{text}" if self.marked else text

    def _check_special(self, ranges: Iterable[tuple[int, int]]) -> None:
        """A text's lone surrogates are searched as U+FFFF only while every class treats
        U+FFFF as it treats them all (see `Regex.search`)."""
        for lo, hi in ranges:
            has_all = lo <= SURROGATES[0] and hi >= 0xFFFF
            has_none = hi < SURROGATES[0] or lo > 0xFFFF or (lo > SURROGATES[1] and hi < 0xFFFF)
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
        ranges = without_surrogates(ranges)
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
    table = ASCII_CATEGORIES if ascii_only else None
    key = {
        _C.CATEGORY_DIGIT: ("d", False),
        _C.CATEGORY_NOT_DIGIT: ("d", True),
        _C.CATEGORY_SPACE: ("s", False),
        _C.CATEGORY_NOT_SPACE: ("s", True),
        _C.CATEGORY_WORD: ("w", False),
        _C.CATEGORY_NOT_WORD: ("w", True),
    }.get(name)
    if key is None:
        raise Unsupported(f"it uses {name}")
    letter, negated = key
    ranges = table[letter] if table is not None else category(letter)
    return complement(ranges) if negated else ranges


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
