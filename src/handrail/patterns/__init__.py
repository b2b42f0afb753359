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

The package: `compiled` (compile_pattern, Regex, the time limit), `translate` (the
parse tree written out for RE2 or `regex`, word boundaries), `charsets` (Python's
character classes as code-point ranges), `schemas` (a JSON Schema validator's patterns).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from handrail.lazy import lazy_attributes

if TYPE_CHECKING:
    from handrail.patterns.charsets import MAX_CODE_POINT, Ranges, category
    from handrail.patterns.compiled import (
        PatternError,
        Regex,
        RegexTimeout,
        compile_pattern,
        flag_bits,
        timeout_ms,
    )
    from handrail.patterns.schemas import harden
    from handrail.patterns.translate import Engine

# loaded on first use: the gate's hook reads path globs (patterns.globs) on every tool
# call, and needs none of the regex engines
_PUBLIC = {
    "MAX_CODE_POINT": "handrail.patterns.charsets",
    "Ranges": "handrail.patterns.charsets",
    "category": "handrail.patterns.charsets",
    "PatternError": "handrail.patterns.compiled",
    "Regex": "handrail.patterns.compiled",
    "RegexTimeout": "handrail.patterns.compiled",
    "compile_pattern": "handrail.patterns.compiled",
    "flag_bits": "handrail.patterns.compiled",
    "timeout_ms": "handrail.patterns.compiled",
    "harden": "handrail.patterns.schemas",
    "Engine": "handrail.patterns.translate",
}

__all__ = [
    "MAX_CODE_POINT",
    "Engine",
    "PatternError",
    "Ranges",
    "Regex",
    "RegexTimeout",
    "category",
    "compile_pattern",
    "flag_bits",
    "harden",
    "timeout_ms",
]

__getattr__ = lazy_attributes("handrail.patterns", _PUBLIC)
