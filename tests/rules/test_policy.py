"""A path rule without wildcards is compared as text, without the glob compiler: it
must match exactly what the compiled glob matches, and a path the compiler refuses
is never taken for a plain one."""

from __future__ import annotations

import pytest

from handrail.patterns.globs import GlobError, compile_glob
from handrail.rules.policy import compile_rule, plain_path

PATHS = (
    "docs/plan.md",
    "docs/plan.mdx",
    "docs/plan",
    "docs",
    "x/docs/plan.md",
    "docs/plan.md/x",
    "a b/c.d",
    "",
)


class Refusals:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def error(self, code: str, message: str, *args: object) -> None:
        self.errors.append(code)

    def warning(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("text", ["docs/plan.md", "a b/c.d", "+(x)|y$.^", ".github/x", "docs/plan"])
def test_a_plain_path_rule_matches_what_its_compiled_glob_matches(text: str) -> None:
    assert plain_path(text)
    compiled = compile_glob(text)
    rule = compile_rule(f"edit:{text}", "/allow/0", Refusals())  # type: ignore[arg-type]
    assert rule is not None
    for path in (*PATHS, text):
        assert rule.matches("edit", path) == compiled.matches(path) == (path == text)
        assert not rule.matches("read", path)


@pytest.mark.parametrize(
    "text",
    [
        "/etc/passwd",
        "~/x",
        "C:x",
        "../x",
        "a/../b",
        "./a",
        "a//b",
        "a/",
        "a\\b",
        "a\x00",
        "*.md",
        "a?",
        "[ab]",
    ],
)
def test_a_path_the_compiler_refuses_or_a_wildcard_is_not_plain(text: str) -> None:
    assert not plain_path(text)
    if not any(c in text for c in "*?["):
        with pytest.raises(GlobError):
            compile_glob(text)
        refusals = Refusals()
        assert compile_rule(f"edit:{text}", "/allow/0", refusals) is None  # type: ignore[arg-type]
        assert refusals.errors == ["H701"]
