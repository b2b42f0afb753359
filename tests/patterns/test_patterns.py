"""Regexes run on text the server does not trust, in time linear in the text.

handrail.patterns writes Python patterns out again for RE2 and keeps Python's meaning;
what RE2 cannot run goes to the `regex` module with a time limit per search, and
`handrail check` says so (H406). These tests assert that calls return and answer
right; how long they take is measured by benchmarks/regex_adversarial.py, not here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from handrail import patterns
from handrail.compiler import compile_text
from handrail.model import budget
from handrail.patterns import PatternError, RegexTimeout, charsets, compile_pattern
from handrail.patterns.compiled import SHORT_TEXT, short_and_plain
from tests.conftest import CORPUS, ROOT
from tests.helpers.wire import wire_next, wire_validate

N = 100_000

# (pattern, flags, text, found): the classic catastrophic patterns on 100 KB texts that
# make a backtracking engine take exponential (or polynomial) time
CATASTROPHIC = [
    ("(a+)+$", "", "a" * N + "!", False),
    ("(a+)+$", "", "a" * N, True),
    ("(a|aa)+$", "", "a" * N + "!", False),
    ("(a|a)*b", "", "a" * N, False),
    ("(.*a){12}", "", "a" * 11 + "b" * N, False),
    ("(.*a){12}", "", ("b" * 8000 + "a") * 12, True),
    ("(x+x+)+y", "", "x" * N, False),
    ("(x+x+)+y", "", "x" * N + "y", True),
    (r"^(\w+\s?)*$", "", "word " * (N // 5) + "!", False),
    (r"(\d+)*\.", "", "1" * N + "x", False),
    (r"^(([a-z])+.)+[A-Z]([a-z])+$", "", "a" * N + "!", False),
    (r"\b(\w+\s*)+$", "i", "abc " * (N // 4) + "é!", False),
    (r"^(\s*,?\s*\d+)*$", "", "1, " * (N // 3) + "x", False),
    ("(?i)(a|A)+$", "", "aA" * (N // 2) + "!", False),
]


@pytest.fixture
def short_timeout() -> Iterator[int]:
    # the limit travels with a request's budget; an hour and no reply bound leave only it
    with budget.spend(3600, 1 << 40, regex_ms=20):
        yield 20


@pytest.mark.parametrize(("pattern", "flags", "text", "found"), CATASTROPHIC, ids=lambda v: str(v)[:20])
def test_catastrophic_patterns_answer_on_100_kb(pattern: str, flags: str, text: str, found: bool) -> None:
    compiled = compile_pattern(pattern, flags)
    assert compiled.engine == "re2" and compiled.fallback is None
    assert (compiled.search(text) is not None) is found


def _workflow(criteria: list[Any], **step: Any) -> str:
    return json.dumps(
        {
            "id": "workflow",
            "name": "W",
            "description": "d",
            "version": "1.0.0",
            "steps": [{"id": "check", "title": "t", "prompt": "p", "validationCriteria": criteria, **step}],
        }
    )


def test_catastrophic_rules_through_workflow_validate() -> None:
    criteria = [{"type": "regex", "pattern": p, "flags": f, "message": p} for p, f, _, _ in CATASTROPHIC]
    compiled = compile_text(_workflow(criteria))
    assert compiled.workflow is not None, compiled.diagnostics
    assert not compiled.diagnostics  # every one runs on RE2: no H406
    result = wire_validate(compiled.workflow, "check", "a" * N + "!")
    # on this text only (.*a){12} is found: every other rule fails, so reports its message
    assert result["issues"] == [p for p, _, _, _ in CATASTROPHIC if p != "(.*a){12}"]


def test_schema_patterns_run_in_linear_time_too() -> None:
    schema = {
        "type": "object",
        "properties": {"slug": {"type": "string", "pattern": "^(a+)+$"}},
        "patternProperties": {"^(x+x+)+y$": {"type": "integer"}},
    }
    criteria = [{"type": "schema", "schema": schema, "message": "m"}]
    workflow = compile_text(_workflow(criteria)).workflow
    assert workflow is not None
    bad = json.dumps({"slug": "a" * N + "!", "x" * N: "not checked"})
    assert wire_validate(workflow, "check", bad)["issues"] == [
        f"m: $.slug: must match pattern ^(a+)+$"  # noqa: F541 (fastjsonschema's wording)
    ]
    assert wire_validate(workflow, "check", json.dumps({"slug": "a" * N}))["valid"] is True
    assert wire_validate(workflow, "check", json.dumps({"slug": "a", "xxy": "one"}))["valid"] is False


def test_schema_formats_keep_their_meaning() -> None:
    criteria = [{"type": "schema", "schema": {"type": "string", "format": "ipv4"}, "message": "m"}]
    workflow = compile_text(_workflow(criteria)).workflow
    assert workflow is not None
    assert wire_validate(workflow, "check", '"10.0.0.1"')["valid"] is True
    assert wire_validate(workflow, "check", '"10.0.0.1x"')["valid"] is False
    assert wire_validate(workflow, "check", json.dumps("1" * N))["valid"] is False


# -- Python's meaning, kept ---------------------------------------------------------------

# (pattern, flags, text, found); each is also checked against Python's `re`
MEANING = [
    ("^DONE$", "", "DONE\n", True),  # $ before a final newline
    ("^DONE$", "", "DONE\n\n", False),
    ("^DONE$", "m", "x\nDONE\ny", True),
    ("a$\n", "", "a\n", True),  # $ with more after it: the backtracking engine
    (r"DONE\Z", "", "DONE\n", False),
    (r"^\d+$", "", "٣٤", True),  # Unicode digits
    (r"(?a)^\d+$", "", "٣", False),
    (r"^\w+$", "", "héllo_1", True),
    (r"\W", "", "é", False),
    (r"^[^\W\d]+$", "", "héllo", True),
    (r"^[^\W\d]+$", "", "h3llo", False),
    (r"\s", "", "\u00a0", True),
    (r"\s", "", "\x1c", True),
    (r"\s", "", "\u200b", False),
    (r"\bcafé\b", "", "un café noir", True),  # Unicode word boundaries
    (r"\bcaf\b", "", "café", False),
    (r"\bnaïve\b", "", "naïveté", False),
    (r"\b\d+\.\d+\.\d+(-[0-9a-z.-]+)?\b", "", "version ١.٢.٣", True),
    (r"\b\d+\.\d+\.\d+(-[0-9a-z.-]+)?\b", "", "1.2.3-rc.", True),
    (r"\b\d+\.\d+\.\d+(-[0-9a-z.-]+)?\b", "", "v1.2.3", False),
    (r"x\b", "", "xé", False),
    (r"\B", "", "x\u00a0s", False),
    (r"a\Bb", "", "ab", True),
    (r"(?i)straße", "", "STRASSE", False),
    (r"(?i)k", "", "\u212a", True),
    (r"(?i)[^k]", "", "K", False),
    (r"(?i)[^\Wk]", "", "K", False),
    ("(?i)ı", "", "I", True),  # Python takes I, i, İ and ı for one another; Unicode folding does not
    ("(?i)i", "", "İ", True),
    ("(?i)[a-z]", "", "ı", True),
    ("(?i)[^i]", "", "İ", False),  # a negated class mixing \W and a letter: backtracking
    (".", "", "\n", False),
    (".", "s", "\n", True),
    ("^.$", "", "👍", True),
    ("status: (?i:ready)", "", "status: READY", True),
    ("STATUS: (?i:ready)", "", "status: ready", False),
    ("(?!.*TODO)", "", "TODO", True),  # found at the end of any text
    ("^.$", "", "\ud800", True),  # lone surrogates
    (r"\W", "", "\ud800", True),
    (r"\w", "", "\ud800", False),
    ("[\ud800-\udfff]", "", "x\udc00", True),
    ("a{1001}", "", "a" * 1001, True),
    ("a*+a", "", "aaa", False),
    ("(?>a+)b", "", "aab", True),
    (r"(\w)\1", "", "hello", True),
    ("(a)?(?(1)b|c)", "", "c", True),
    ("(?<=v)[0-9]+", "", "v12", True),
    ("(?<!v)[0-9]+", "", "v12", True),
    ("(?x) a  b # a comment", "", "ab", True),
    ("^a{,3}$", "", "aaa", True),
    ("^a{,3}$", "", "aaaa", False),
    (r"\AB", "", "AB", False),
    ("", "", "", True),
    (r"\B", "", "", False),  # Python's: \B does not match an empty text
]


@pytest.mark.parametrize(("pattern", "flags", "text", "found"), MEANING, ids=lambda v: repr(v)[:24])
def test_patterns_keep_pythons_meaning(pattern: str, flags: str, text: str, found: bool) -> None:
    python = re.search(pattern, text, patterns.flag_bits(flags)) is not None
    assert python is found, "the table is wrong"
    assert (compile_pattern(pattern, flags).search(text) is not None) is found


ENGINES = [
    ("(?!.*TODO)", None),
    (r"\b(TBD|TODO|FIXME|XXX)\b", None),
    ("^DONE$", None),
    ("a$\n", "`$` is followed by more of the pattern"),
    ("(?<=v)1", "it uses a lookbehind (?<=...)"),
    ("(?!x)y", "it uses a negative lookahead (?!...)"),
    (r"(a)\1", "it uses a backreference"),
    ("(?>a)", "it uses an atomic group (?>...)"),
    ("a++", "it uses a possessive quantifier"),
    ("a{1001}", "a repeat count above 1000"),
    ("[\ud800]", "it holds a lone surrogate"),
]


@pytest.mark.parametrize(("pattern", "reason"), ENGINES)
def test_each_pattern_says_which_engine_runs_it_and_why(pattern: str, reason: str | None) -> None:
    compiled = compile_pattern(pattern)
    assert compiled.fallback == reason
    assert compiled.engine == ("re2" if reason is None else "regex")


ATOMS = [
    "a", "b", "é", "K", "k", "\u212a", " ", r"\n", r"\.", r"\d", r"\w", r"\s", r"\W", r"\S", r"\D",
    "[a-c]", "[^a]", r"[^\W\d]", r"[\w.]", "(?i:a)", "^", "$", r"\b", r"\B", r"\A", r"\Z", "1", "٣",
    "_", "-", "ß", "ſ", "S", "x", r"[\s\d]", r"[^\s]", ".", "(?=a)", r"(?<!\w)", "i", "İ", "[h-j]",
]  # fmt: skip
TEXT = st.text(st.sampled_from(list("abéKk\u212a \n.1٣_-ßſSsxAB\t\u00a0²IiİıJ")), max_size=10)


@st.composite
def small_patterns(draw: st.DrawFn, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 9)) if depth < 2 else 9
        if kind == 0:
            parts.append("(" + draw(small_patterns(depth + 1)) + ")")
        elif kind == 1:
            parts.append(
                "(?:" + draw(small_patterns(depth + 1)) + "|" + draw(small_patterns(depth + 1)) + ")"
            )
        else:
            atom = draw(st.sampled_from(ATOMS))
            if atom not in ("^", "$", r"\b", r"\B", r"\A", r"\Z", "(?=a)", r"(?<!\w)"):
                atom += draw(st.sampled_from(["", "", "*", "+", "?", "{2}", "{1,3}", "*?", "+?"]))
            parts.append(atom)
    return "".join(parts)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    small_patterns(), st.sampled_from(["", "i", "m", "s", "im", "is"]), st.lists(TEXT, min_size=1, max_size=6)
)
@example(r"\b^", "", ["²"])  # found by chance: a boundary before an anchor, on marked text
@example(r"\b(^)", "", ["²"])  # and the same through a group
@example(r"(\S\ba*a*?)\b", "", ["²"])  # and two boundaries at one place
def test_every_pattern_finds_what_python_finds(pattern: str, flags: str, texts: list[str]) -> None:
    try:
        python = re.compile(pattern, patterns.flag_bits(flags))
    except re.error:
        return
    compiled = compile_pattern(pattern, flags)
    if short_and_plain(pattern):  # padded past SHORT_TEXT too, so that RE2 is asked as well
        pad = " " * SHORT_TEXT
        texts = [*texts, *(pad + t for t in texts), *(t + pad for t in texts)]
    for text in texts:
        assert (compiled.search(text) is not None) == (python.search(text) is not None), (
            pattern,
            flags,
            text,
        )


@pytest.mark.parametrize(
    ("pattern", "plain"),
    [
        (r"\b(unit test|integration test|end-to-end)\b", True),
        (r"(?i)^done\.$", True),
        (r"a+", False),
        (r"x{2}", False),
        (r"[?]", False),  # a literal `?` inside a class still counts: the check is plain text
        (r"(a|b)(c|d)(e|f)(g|h)(i|j)", False),  # too many paths to try at each place
    ],
)
def test_only_patterns_without_repeats_and_with_few_alternatives_are_plain(pattern: str, plain: bool) -> None:
    assert short_and_plain(pattern) is plain


def test_a_plain_pattern_finds_what_python_finds_on_short_and_long_texts() -> None:
    compiled = compile_pattern(r"\b(é|test)\b")  # a non-ASCII word: RE2 needs Python's boundaries
    for text in ["é", "xé", "a test", "atest", "é" + " " * SHORT_TEXT, "xé" + " " * SHORT_TEXT]:
        expected = re.search(r"\b(é|test)\b", text) is not None
        assert (compiled.search(text) is not None) is expected, text


@pytest.mark.slow
@pytest.mark.parametrize(
    "pattern",
    [
        *(r"\b^", r"(?m)\b^", r"\b\A", r"$\b", r"(?m)$\b", r"\Z\b", r"\b\b^", r"a\b\bb", r"x|\b^"),
        *(r"\b(^)", r"(\b)^", r"($)\b", r"\b(?:x|^)", r"(?:\b)*^", r"\b(a|)^"),  # through groups
        *(r"(\S\ba*a*?)\b", r"\b\w*\b", r"\b(?:\b)"),  # twice at one place
    ],
)
def test_a_boundary_beside_an_anchor_or_another_boundary_holds_where_python_says(pattern: str) -> None:
    # on texts with non-ASCII word characters (`²` is one), whose boundaries RE2 finds marked
    compiled = compile_pattern(pattern)
    for text in ["²", "a²", "²a", "x\n²", "² ", "b ²", "²\n", "a b", "ab"]:
        assert (compiled.search(text) is not None) == (re.search(pattern, text) is not None), (pattern, text)


# -- the backtracking engine, bounded ------------------------------------------------------


def test_a_search_past_the_time_limit_is_an_error_not_an_answer(short_timeout: int) -> None:
    compiled = compile_pattern("(?=(a|aa)+$)")
    assert compiled.engine == "regex"
    with pytest.raises(RegexTimeout) as caught:
        compiled.search("a" * 40 + "!")
    assert caught.value.code == -32004
    assert caught.value.data["limit"] == "regexTimeoutMs" and caught.value.data["value"] == short_timeout
    assert compiled.search("a" * 40) is True  # a text it can answer for


def test_a_timed_out_rule_fails_the_call_even_under_not(short_timeout: int) -> None:
    criteria = [{"not": {"type": "regex", "pattern": "(?=(a|aa)+$)", "message": "m"}}]
    workflow = compile_text(_workflow(criteria)).workflow
    assert workflow is not None
    with pytest.raises(RegexTimeout):
        wire_validate(workflow, "check", "a" * 40 + "!")


def test_matches_in_conditions_goes_through_the_same_engines() -> None:
    source = _workflow([], runCondition={"var": "tag", "matches": "^(v+)+$"})
    workflow = compile_text(source).workflow
    assert workflow is not None
    assert wire_next(workflow, [], {"tag": "v" * N + "!"})["step"] is None
    assert wire_next(workflow, [], {"tag": "v" * N})["step"]["id"] == "check"


@pytest.mark.slow
def test_long_numeric_strings_compare_in_linear_time() -> None:
    # a numeric-string check that backtracked quadratically (30 KB took 26 s)
    workflow = compile_text(_workflow([], runCondition={"var": "n", "equals": 5})).workflow
    assert workflow is not None
    assert wire_next(workflow, [], {"n": "1" * 1_000_000 + "x"})["step"] is None
    assert wire_next(workflow, [], {"n": "5."})["step"]["id"] == "check"


# -- what `handrail check` says ------------------------------------------------------------


@pytest.mark.slow
def test_check_warns_about_each_pattern_that_backtracks(tmp_path: Path) -> None:
    criteria = [
        {"type": "regex", "pattern": "^(?!.*TODO).+$", "message": "m"},
        {"type": "regex", "pattern": r"\b(done|finished)\b", "flags": "i", "message": "m"},
    ]
    path = tmp_path / "workflow.json"
    path.write_text(_workflow(criteria), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "check", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr  # warnings only: the workflow loads
    (warning,) = json.loads(done.stdout)
    assert (warning["code"], warning["severity"]) == ("H406", "warning")
    assert warning["pointer"] == "/steps/0/validationCriteria/0/pattern"
    assert "negative lookahead" in warning["message"]


@pytest.mark.corpus
def test_the_corpus_lookahead_runs_on_re2() -> None:
    source = (CORPUS / "spec-examples" / "conditional-workflow-example.json").read_text("utf-8")
    assert "(?!.*TODO)" in source
    compiled = compile_pattern("(?!.*TODO)")
    assert compiled.engine == "re2"
    assert compiled.search("TODO: everything") is True  # what Python says too


def test_engines_print_nothing_on_bad_patterns() -> None:
    code = (
        "from handrail.patterns import compile_pattern, PatternError\n"
        "for p in ['a{1001}', '(?<=a)b', '[\\ud800]', '(?P<n>a)(?P=n)']:\n"
        "    compile_pattern(p).search('aab')\n"
        "try:\n"
        "    compile_pattern('(')\n"
        "except PatternError:\n"
        "    pass\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_invalid_patterns_keep_pythons_messages() -> None:
    with pytest.raises(PatternError) as caught:
        compile_pattern("^(summary|result")
    assert (caught.value.message, caught.value.offset) == ("missing ), unterminated subpattern", 1)
    with pytest.raises(PatternError, match="nested too deeply"):
        compile_pattern("(" * 5000 + ")" * 5000)


# -- the character sets, exactly Python's --------------------------------------------------


def test_the_character_sets_are_pythons() -> None:
    for name in ("w", "d", "s"):
        assert patterns.category(name) == charsets.scan(charsets.CLASSES[name], 0x110000)


def test_case_folding_cannot_widen_the_character_sets() -> None:
    # U+0345 (a combining mark, so no word character) folds to a Greek iota: \\w must
    # not take it even when ignoring case, as Python's does not
    assert re.search(r"(?i)\w", "\u0345") is None
    for name in ("w", "d", "s"):
        members = patterns.category(name)
        outside = "".join(
            chr(c) for lo, hi in charsets.complement(members) for c in range(lo, min(hi, 0x3FFFF) + 1)
        )
        member = {"w": "a", "d": "0", "s": " "}[name]  # a class mixing the set with a member of it
        for pattern in (f"\\{name}", f"[\\{name}]", f"[\\{name}{member}]"):
            assert compile_pattern(pattern, "i").search(outside) is None, pattern
