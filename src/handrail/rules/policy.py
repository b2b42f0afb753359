"""A step's gate policy (`allow`, `deny`; spec/gate.md) compiled into closures, with
its problems reported (H700 to H702).

The workflow's own `allow` and `deny` are the default of every step that gives no
list of that name. `policy_of_source` compiles one step's policy from a pinned
source without compiling the whole workflow: the gate runs on every tool call and
needs nothing else. The compiled types, `GateRule` and `Policy`, are the model's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from handrail.model.step_policy import OWN_SERVER, OWN_TOOLS, GateRule, Policy
from handrail.rules.shell_line import glob_matches

if TYPE_CHECKING:
    from typing import Any

    from handrail.model.errors import Reporter


class _Silent:
    """A reporter for a source already reported when it was first compiled."""

    def error(self, *args: Any, **kwargs: Any) -> None:
        pass

    def warning(self, *args: Any, **kwargs: Any) -> None:
        pass


KINDS = ("edit", "read", "shell", "mcp", "web", "tool")


def compile_rule(raw: Any, at: str, report: Reporter) -> GateRule | None:
    """One rule, or None when it has an error (reported)."""
    if isinstance(raw, Mapping):
        text, message, where = raw["action"], raw.get("message"), f"{at}/action"
    else:
        text, message, where = raw, None, at
    kind, colon, target = text.partition(":")
    if kind not in KINDS:
        from handrail.expr import did_you_mean  # lazy: a hook's start-up

        report.error(
            "H700",
            f"`{kind}` is not an action of the gate's vocabulary",
            where,
            did_you_mean(kind, list(KINDS))
            or "write edit, read, shell, mcp, web or tool, optionally followed by `:` and what it applies to",
        )
        return None
    if colon and not target:
        report.error(
            "H701", f"`{text}` has nothing after `:`", where, f"write `{kind}` alone for every {kind}"
        )
        return None
    matches = _matcher(kind, target if colon else None, where, report)
    return None if matches is None else GateRule(text, kind, message, matches)


def _matcher(kind: str, target: str | None, at: str, report: Reporter) -> Callable[[str, str], bool] | None:
    if target is None:
        return lambda k, t: k == kind
    if kind == "web":
        report.error("H701", "`web` takes no target", at, "write `web`: the gate does not match addresses")
        return None
    if kind in ("edit", "read"):
        if plain_path(target):
            return lambda k, t: k == kind and t == target
        from handrail.patterns.globs import GlobError, compile_glob  # lazy: a hook's start-up

        try:
            glob = compile_glob(target)
        except GlobError as exc:
            report.error("H701", f"invalid glob: {exc.message}", at, None, len(kind) + 1 + exc.offset)
            return None
        path_matches = glob.matches
        return lambda k, t: k == kind and path_matches(t)
    if kind == "mcp":
        server, slash, tool = target.partition("/")
        if not server or (slash and not tool):
            report.error(
                "H701",
                f"`mcp:{target}` names no server or no tool",
                at,
                "write mcp:SERVER or mcp:SERVER/TOOL",
            )
            return None
        if not slash:
            return lambda k, t: k == "mcp" and glob_matches(server, t.partition("/")[0])
        return lambda k, t: k == "mcp" and glob_matches(target, t)
    return lambda k, t: k == kind and glob_matches(target, t)


def plain_path(text: str) -> bool:
    """Whether `text` is a path glob with no wildcard that `compile_glob` accepts: it
    matches that one path and nothing else, so the hook compares it without loading
    the glob compiler."""
    if not text or any(c in text for c in "*?[\\\x00") or text.startswith(("/", "~")):
        return False
    if len(text) > 1 and text[1] == ":" and text[0].isascii() and text[0].isalpha():
        return False  # a drive letter: an absolute path
    return all(segment not in ("", ".", "..") for segment in text.split("/"))


def compile_rules(raw: Any, at: str, report: Reporter) -> tuple[GateRule, ...]:
    return tuple(rule for _, rule in _indexed(raw, at, report))


def _indexed(raw: Any, at: str, report: Reporter) -> list[tuple[str, GateRule]]:
    """Each rule that compiled, with where it is written."""
    found = []
    for index, item in enumerate(raw):
        rule = compile_rule(item, f"{at}/{index}", report)
        if rule is not None:
            found.append((f"{at}/{index}" + ("/action" if isinstance(item, Mapping) else ""), rule))
    return found


def compile_defaults(document: Mapping[str, Any], report: Reporter) -> Policy | None:
    """The workflow's own lists, the default of its steps; None when it gives neither."""
    if "allow" not in document and "deny" not in document:
        return None
    allow = compile_rules(document["allow"], "/allow", report) if "allow" in document else None
    denies = _indexed(document.get("deny", ()), "/deny", report)
    _report_idle_denies(allow, denies, report)
    return Policy(allow, tuple(rule for _, rule in denies))


def step_policy(raw: Mapping[str, Any], at: str, defaults: Policy | None, report: Reporter) -> Policy | None:
    """A step's policy: its own lists, each falling back on the workflow's."""
    if "allow" not in raw and "deny" not in raw:
        return defaults
    allow = compile_rules(raw["allow"], f"{at}/allow", report) if "allow" in raw else None
    if allow is None and defaults is not None:
        allow = defaults.allow
    if "deny" not in raw:
        return Policy(allow, defaults.deny if defaults is not None else ())
    denies = _indexed(raw["deny"], f"{at}/deny", report)
    _report_idle_denies(allow, denies, report)
    return Policy(allow, tuple(rule for _, rule in denies))


def _report_idle_denies(
    allow: tuple[GateRule, ...] | None, denies: list[tuple[str, GateRule]], report: Reporter
) -> None:
    """H702: a deny that can never decide anything, because what it names is allowed
    whatever the step says (handrail's own tools) or is never allowed in the first place."""
    allowed_kinds = None if allow is None else {rule.kind for rule in allow}
    for where, rule in denies:
        if rule.kind == "mcp" and all(rule.matches("mcp", f"{OWN_SERVER}/{tool}") for tool in OWN_TOOLS):
            report.warning(
                "H702",
                f"deny `{rule.text}` can never apply: handrail's own run tools are always allowed",
                where,
                "remove it",
            )
        elif allowed_kinds is not None and rule.kind not in allowed_kinds:
            report.warning(
                "H702",
                f"deny `{rule.text}` can never apply: the allow list allows no {rule.kind} at all",
                where,
                "remove it, or allow what it should take away from",
            )


def policy_of_source(document: Mapping[str, Any], step_id: str) -> Policy | None:
    """The policy of step `step_id` of a workflow source already compiled once (its
    problems were reported then)."""
    silent: Any = _Silent()
    defaults = compile_defaults(document, silent)
    for raw in iter_steps(document.get("steps", ())):
        if raw.get("id") == step_id:
            return step_policy(raw, "", defaults, silent)
    return defaults


def iter_steps(steps: Any) -> Iterator[Mapping[str, Any]]:
    """Every step of a source in document order, loop bodies written inline included
    (loops themselves left out)."""
    for raw in steps if isinstance(steps, list) else ():
        if not isinstance(raw, Mapping):
            continue
        if raw.get("type") == "loop":
            yield from iter_steps(raw.get("body"))
        else:
            yield raw
