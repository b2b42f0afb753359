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

from typing import TYPE_CHECKING, Any

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
_MODULES = {
    "MAX_CODE_POINT": "charsets",
    "Ranges": "charsets",
    "category": "charsets",
    "PatternError": "compiled",
    "Regex": "compiled",
    "RegexTimeout": "compiled",
    "compile_pattern": "compiled",
    "flag_bits": "compiled",
    "timeout_ms": "compiled",
    "harden": "schemas",
    "Engine": "translate",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'handrail.patterns' has no attribute {name!r}")
    from importlib import import_module  # lazy: a hook loads only what it uses

    return getattr(import_module(f"handrail.patterns.{module}"), name)


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
