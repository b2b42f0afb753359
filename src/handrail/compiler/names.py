"""The names a workflow's conditions read and its texts mention: a condition reading a
variable no text asks the agent to set (H307), a template naming what nothing sets (H500)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from handrail.compiler.steps import Entry
from handrail.expr import ParsedConditions, Reporter, did_you_mean
from handrail.expr.ast import All, Any_, Compare, Not, Truthy, variables

TEMPLATE = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
WORD = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
TOKEN = re.compile(r"[\w$]+")
VARIABLE_LIKE = re.compile(r"[a-z0-9][A-Z]|_")  # camelCase or snake_case: a name, not a word
DOTTED = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z0-9_$]+)*$")
SUGGESTED_NAMES = 50  # unmentioned names that get a did-you-mean (H307)
SUGGESTION_CANDIDATES = 5_000  # names compared with each of them, at the most
LOOP_DEFAULTS = {
    "iterationVar": "currentIteration",
    "itemVar": "currentItem",
    "indexVar": "currentIndex",
}
MAX_ITERATIONS = 1000


@dataclass
class Names:
    document: Mapping[str, Any]
    report: Reporter
    entries: dict[str, Entry]
    parsed: ParsedConditions  # each condition parsed once, shared with the compiler
    known_vars: set[str] = field(default_factory=set)
    reads: list[tuple[str, str]] = field(default_factory=list)  # (root, pointer) a step's decision reads

    def gather_variables(self) -> None:
        """Names a template may use: loop variables and anything a condition tests."""
        for entry in self.entries.values():
            raw = entry.raw
            for key in ("runCondition", "requireConfirmation"):
                self.note_reads(raw.get(key), f"{entry.pointer}/{key}")
            for rule, at in _walk_rules(raw.get("validationCriteria"), f"{entry.pointer}/validationCriteria"):
                self.note_names(rule.get("condition"), f"{at}/condition")
            for index, check in enumerate(raw.get("checks", ())):
                self.note_names(check.get("condition"), f"{entry.pointer}/checks/{index}/condition")
            if raw.get("type") == "loop":
                cfg = raw["loop"]
                self.note_reads(cfg.get("condition"), f"{entry.pointer}/loop/condition")
                for key, default in LOOP_DEFAULTS.items():
                    self.known_vars.add(cfg.get(key, default))
                if isinstance(cfg.get("items"), str):
                    self.known_vars.add(cfg["items"].split(".")[0])
                if isinstance(cfg.get("count"), str):
                    self.known_vars.add(cfg["count"].split(".")[0])

    def note_reads(self, condition: Any, at: str) -> None:
        """The root names a condition reads, for templates (known_vars) and for H307."""
        if condition is None:
            return
        tree, _ = self.parsed.parse(condition, at)  # problems are reported when it is compiled
        seen: set[str] = set()
        stack: list[Any] = [tree]
        while stack:
            node = stack.pop()
            if isinstance(node, Compare | Truthy):
                root = node.var.split(".")[0]
                self.known_vars.add(root)
                if root not in seen:
                    seen.add(root)
                    self.reads.append((root, node.at or at))
            elif isinstance(node, All | Any_):
                stack.extend(reversed(node.items))
            elif isinstance(node, Not):
                stack.append(node.item)

    def note_names(self, condition: Any, at: str) -> None:
        """The root names of the variables a condition reads, whatever its form."""
        if condition is None:
            return
        tree, _ = self.parsed.parse(condition, at)  # problems are reported when it is compiled
        self.known_vars.update(name.split(".")[0] for name in variables(tree))

    def check_condition_variables(self) -> None:
        """A condition that reads a variable no text of the workflow mentions (no prompt,
        guidance, loop or template): the agent is never asked to set it, so the step
        waits for it for ever. Often a misspelling (`riskLevl` where prompts say
        `riskLevel`), hence the did-you-mean."""
        reads = self.reads
        if not reads:
            return
        loop_set = {
            entry.raw["loop"].get(key, default)
            for entry in self.entries.values()
            if entry.raw.get("type") == "loop"
            for key, default in LOOP_DEFAULTS.items()
        }
        prose = _prose(self.document)
        words = set(WORD.findall(prose))
        lowered = {w.lower() for w in TOKEN.findall(prose)}  # whole words, as written
        unmentioned: dict[str, str | None] = {}  # name -> its hint, worked out once per name
        mentioned = {n for n, _ in reads if n in loop_set or n.lower() in lowered}
        # names an agent is told about, for the did-you-mean: worked out once, and only for
        # the first few unmentioned names, so a condition of thousands of names stays linear
        candidates = sorted({w for w in words if VARIABLE_LIKE.search(w)} | loop_set | mentioned)
        for name, at in reads:
            if name in mentioned:
                continue
            if name not in unmentioned:
                suggest = len(unmentioned) < SUGGESTED_NAMES and len(candidates) <= SUGGESTION_CANDIDATES
                unmentioned[name] = did_you_mean(name, candidates) if suggest else None
            self.report.warning(
                "H307",
                f"the condition reads `{name}`, which no prompt, guidance, loop or template mentions",
                at,
                unmentioned[name]
                or f"say in a prompt or guidance line what the agent should set `{name}` to",
            )

    def check_templates(self, text: Any, at: str) -> None:
        if not isinstance(text, str) or "{{" not in text:
            return
        for match in TEMPLATE.finditer(text):
            name = match.group(1)
            if not DOTTED.match(name):
                continue  # an expression; shown as written
            root = name.split(".")[0]
            if root not in self.known_vars:
                self.report.warning(
                    "H500",
                    f"template `{{{{{name}}}}}` names `{root}`, which no condition tests and no loop sets",
                    at,
                    did_you_mean(root, sorted(self.known_vars))
                    or f"the agent must set it in the context, or it shows as [unset: {name}]",
                    match.start(1),
                )


# Keys whose strings are read by the engine, not by the agent: they mention nothing.
_NOT_PROSE = frozenset({"runCondition", "requireConfirmation", "condition", "$schema"})


def _prose(document: Mapping[str, Any]) -> str:
    """Every text an agent or author reads in the workflow, one per line: names,
    descriptions, prompts, guidance, rule messages, loop settings, ids."""
    texts: list[str] = []
    stack: list[Any] = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, Mapping):
            stack.extend(v for k, v in value.items() if k not in _NOT_PROSE)
    return "\n".join(texts)


def _walk_rules(criteria: Any, at: str) -> list[tuple[Mapping[str, Any], str]]:
    """Every rule of `validationCriteria`, with its place (as compile_criteria names it)."""
    out: list[tuple[Mapping[str, Any], str]] = []
    stack = [(criteria, at)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, list):
            stack.extend((v, f"{where}/{i}") for i, v in enumerate(item))
        elif isinstance(item, Mapping):
            if "type" in item:
                out.append((item, where))
            else:
                stack.extend((v, f"{where}/{k}") for k, v in item.items() if k in ("and", "or", "not"))
    return out
