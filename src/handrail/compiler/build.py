"""Semantic checks and construction of the compiled workflow.

Runs on documents that satisfy the schema, so shapes are known; every problem is
reported, none stops the others from being found.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from handrail import budget
from handrail.compiler.checks import Commands, compile_checks
from handrail.compiler.source import KEY
from handrail.expr import ParsedConditions, Reporter, compile_condition, did_you_mean
from handrail.expr.ast import All, Any_, Compare, Not, Truthy, variables
from handrail.model import AnyStep, Condition, Loop, Rule, Step, StepCheck, Workflow, WorkflowOrigin
from handrail.rules import compile_criteria, criteria_text

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
# WorkRail convention: metaGuidance may define a function as a line "name(): what it does"
GUIDANCE_FUNCTION = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\(\)")


@dataclass
class _Entry:
    raw: Mapping[str, Any]
    pointer: str
    parent: str | None  # enclosing loop id
    functions: tuple[str, ...]  # functions visible from here (loop scopes)


@dataclass
class _Build:
    document: Mapping[str, Any]
    report: Reporter
    entries: dict[str, _Entry] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    owner: dict[str, str] = field(default_factory=dict)  # body step id -> loop id
    known_vars: set[str] = field(default_factory=set)
    reads: list[tuple[str, str]] = field(default_factory=list)  # (root, pointer) a step's decision reads
    parsed: ParsedConditions = field(default_factory=ParsedConditions)  # each condition parsed once

    def collect(self, steps: list[Any], at: str, parent: str | None, functions: tuple[str, ...]) -> None:
        for index, raw in enumerate(steps):
            pointer = f"{at}/{index}"
            sid = raw["id"]
            if sid in self.entries:
                first = self.entries[sid].pointer
                self.report.error(
                    "H200",
                    f"duplicate step id `{sid}`",
                    f"{pointer}/id",
                    f"the first `{sid}` is at {first}; ids must be unique, loop bodies included",
                )
                continue
            self.entries[sid] = _Entry(raw, pointer, parent, functions)
            self.order.append(sid)
            if raw.get("type") == "loop":
                own = functions + _function_names(raw.get("functionDefinitions"))
                body = raw["body"]
                if isinstance(body, list):
                    self.collect(body, f"{pointer}/body", sid, own)

    def link_bodies(self) -> None:
        for sid in list(self.order):
            entry = self.entries[sid]
            raw = entry.raw
            if raw.get("type") != "loop":
                continue
            body = raw["body"]
            if isinstance(body, list):
                for step in body:
                    if step["id"] in self.entries and self.entries[step["id"]].parent == sid:
                        self.owner.setdefault(step["id"], sid)
                continue
            where = f"{entry.pointer}/body"
            if body not in self.entries:
                self.report.error(
                    "H201",
                    f"loop body `{body}` names no step of this workflow",
                    where,
                    did_you_mean(body, self.order),
                )
            elif body == sid:
                self.report.error("H208", f"loop `{sid}` names itself as its body", where)
            elif body in self.owner:
                self.report.error(
                    "H202",
                    f"step `{body}` is already the body of loop `{self.owner[body]}`",
                    where,
                    "a step can be the body of one loop; copy it under a new id",
                )
            elif self.entries[body].parent is not None:
                self.report.error(
                    "H202",
                    f"step `{body}` is already inside loop `{self.entries[body].parent}`",
                    where,
                )
            else:
                self.owner[body] = sid
                target = self.entries[body]
                target.parent = sid
                target.functions = entry.functions + _function_names(raw.get("functionDefinitions"))
        # loops that contain each other through their bodies would never end
        reported: set[str] = set()
        for sid in self.order:
            chain: list[str] = []
            cursor: str | None = sid
            while cursor is not None and cursor not in chain and cursor not in reported:
                chain.append(cursor)
                cursor = self.owner.get(cursor)
            if cursor is None or cursor in reported:
                continue
            cycle = chain[chain.index(cursor) :]
            reported.update(cycle)
            # start at a loop whose body is a reference: that is what closes the cycle
            first = min(
                (i for i in cycle if isinstance(self.entries[i].raw["body"], str)),
                key=self.order.index,
            )
            start = cycle.index(first)
            ring = cycle[start:] + cycle[:start]
            # `ring` runs from a step to the loop whose body it is; say it from the outside in
            path = " -> ".join(f"`{i}`" for i in [first, *reversed(ring[1:]), first])
            self.report.error(
                "H208",
                f"loops contain each other: {path}",
                f"{self.entries[first].pointer}/body",
                "a loop's body cannot lead back to the loop; break the cycle",
            )

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

    def check_functions(self, entry: _Entry, workflow_functions: tuple[str, ...]) -> tuple[str, ...]:
        raw = entry.raw
        visible = workflow_functions + entry.functions + _function_names(raw.get("functionDefinitions"))
        refs = tuple(raw.get("functionReferences", ()))
        for index, ref in enumerate(refs):
            name = ref[:-2] if ref.endswith("()") else ref
            if name not in visible:
                self.report.error(
                    "H206",
                    f"function `{name}` is not defined",
                    f"{entry.pointer}/functionReferences/{index}",
                    did_you_mean(name, list(visible)) or "define it in functionDefinitions",
                )
        return refs

    def condition(self, raw: Mapping[str, Any], key: str, at: str, what: str) -> Condition | None:
        """The compiled condition; None when there is none, or when it has errors (reported)."""
        if key not in raw:
            return None
        watch = self.report.watch()
        compiled = compile_condition(raw[key], f"{at}/{key}", watch, what=what, parsed=self.parsed)
        return None if watch.failed else compiled

    def confirmation(self, raw: Mapping[str, Any], at: str) -> bool | Condition:
        value = raw.get("requireConfirmation", False)
        if isinstance(value, bool):
            return value
        return compile_condition(
            value,
            f"{at}/requireConfirmation",
            self.report,
            what="confirmation condition",
            parsed=self.parsed,
        )


def _function_names(defs: Any) -> tuple[str, ...]:
    return tuple(d["name"] for d in defs or () if isinstance(d, Mapping) and "name" in d)


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


def build_workflow(
    document: Mapping[str, Any],
    text: str,
    file: str,
    report: Reporter,
    *,
    commands: Commands | None = None,
    origin: WorkflowOrigin = "submitted",
) -> Workflow:
    b = _Build(document, report)
    b.collect(document["steps"], "/steps", None, ())
    b.link_bodies()
    b.gather_variables()
    b.check_condition_variables()
    workflow_functions = _function_names(document.get("functionDefinitions")) + tuple(
        m.group(1) for line in document.get("metaGuidance", ()) if (m := GUIDANCE_FUNCTION.match(line))
    )
    nodes: dict[str, AnyStep] = {}
    for sid in b.order:
        budget.check()  # a workflow a client sends is compiled within its request's budget
        entry = b.entries[sid]
        raw, at = entry.raw, entry.pointer
        for key in ("title", "prompt", "agentRole"):
            b.check_templates(raw.get(key), f"{at}/{key}")
        for index, line in enumerate(raw.get("guidance", ()) or ()):
            b.check_templates(line, f"{at}/guidance/{index}")
        run_condition = b.condition(raw, "runCondition", at, "runCondition")
        if run_condition is not None and run_condition.constant is False:
            report.warning(
                "H203",
                f"step `{sid}` can never run",
                f"{at}/runCondition",
                "its runCondition never holds",
            )
        confirmation = b.confirmation(raw, at)
        if raw.get("type") == "loop":
            nodes[sid] = _loop(b, entry, sid, run_condition, confirmation)
            continue
        refs = b.check_functions(entry, workflow_functions)
        rules: tuple[Rule, ...] = ()
        if "validationCriteria" in raw:
            rules = compile_criteria(
                raw["validationCriteria"], f"{at}/validationCriteria", report, parsed=b.parsed
            )
        checks: tuple[StepCheck, ...] = ()
        if "checks" in raw:
            checks = compile_checks(raw["checks"], f"{at}/checks", report, commands=commands, parsed=b.parsed)
        nodes[sid] = Step(
            id=sid,
            title=raw["title"],
            prompt=raw["prompt"],
            agent_role=raw.get("agentRole"),
            guidance=tuple(raw.get("guidance", ())),
            model_hint=raw.get("modelHint"),
            ask_for_files=bool(raw.get("askForFiles", False)),
            confirmation=confirmation,
            run_condition=run_condition,
            rules=rules,
            criteria=tuple(criteria_text(rule) for rule in rules),
            function_references=refs,
            loop=b.owner.get(sid),
            pointer=at,
            checks=checks,
        )
    sequence = tuple(sid for sid in b.order if b.entries[sid].parent is None and sid not in b.owner)
    _check_file_name(document["id"], file, report)
    import orjson

    try:
        source = orjson.dumps(document)
    except TypeError:  # orjson refuses integers past 64 bits, and nesting deeper than 254
        try:
            source = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
        except (RecursionError, ValueError):
            report.error("H001", "the workflow is nested too deeply", "")
            source = b""
        if len(source) and _too_deep_for_orjson(document):
            report.error("H001", "the workflow is nested too deeply", "")
            source = b""
    return Workflow(
        id=document["id"],
        name=document["name"],
        description=document["description"],
        version=document["version"],
        category=document.get("category", "general"),
        model_hint=document.get("modelHint"),
        preconditions=tuple(document.get("preconditions", ())),
        clarification_prompts=tuple(document.get("clarificationPrompts", ())),
        meta_guidance=tuple(document.get("metaGuidance", ())),
        sequence=sequence,
        nodes=nodes,
        document=source,
        file=file,
        revision=hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16],
        origin=origin,
    )


def _loop(
    b: _Build,
    entry: _Entry,
    sid: str,
    run_condition: Condition | None,
    confirmation: bool | Condition,
) -> Loop:
    raw, at = entry.raw, entry.pointer
    cfg = raw["loop"]
    kind = cfg["type"]
    where = f"{at}/loop"
    max_iterations = cfg["maxIterations"]
    if not (isinstance(max_iterations, int) or float(max_iterations).is_integer()) or not (
        1 <= max_iterations <= MAX_ITERATIONS
    ):
        b.report.error(
            "H204",
            f"maxIterations is {max_iterations}; it must be a whole number from 1 to {MAX_ITERATIONS}",
            f"{where}/maxIterations",
        )
        max_iterations = max(1, min(MAX_ITERATIONS, int(max_iterations)))
    condition = None
    if kind in ("while", "until"):
        if "condition" not in cfg:
            b.report.error(
                "H205",
                f"a `{kind}` loop needs a `condition`",
                where,
                'add "condition": {"var": "...", "equals": ...}',
            )
        else:
            condition = b.condition(cfg, "condition", where, "loop condition")
    count = cfg.get("count")
    if kind == "for":
        if count is None:
            b.report.error(
                "H205",
                "a `for` loop needs a `count`: a number or a context variable",
                where,
                'add "count": 3',
            )
        elif not isinstance(count, str):
            if not float(count).is_integer():
                b.report.error("H204", f"count {count} is not a whole number", f"{where}/count")
            count = int(count)
            if count > max_iterations:
                b.report.warning(
                    "H209",
                    f"count {count} exceeds maxIterations {max_iterations}; "
                    f"the loop stops after {max_iterations}",
                    f"{where}/count",
                )
            if count == 0:
                b.report.warning(
                    "H203",
                    f"loop `{sid}` runs zero times, so its body never runs",
                    f"{where}/count",
                )
    if kind == "forEach" and not cfg.get("items"):
        b.report.error(
            "H205",
            "a `forEach` loop needs `items`: the context variable holding the list",
            where,
            'add "items": "<variable>"',
        )
    if (kind in ("forEach",) and "count" in cfg) or (kind != "forEach" and "items" in cfg):
        b.report.warning(
            "H405",
            f"a `{kind}` loop ignores " + ("`count`" if "count" in cfg and kind == "forEach" else "`items`"),
            where,
        )
    body = raw["body"]
    body_ids = (body,) if isinstance(body, str) else tuple(s["id"] for s in body)
    return Loop(
        id=sid,
        title=raw["title"],
        kind=kind,
        condition=condition,
        items=cfg.get("items"),
        count=count if isinstance(count, int | str) else None,
        max_iterations=int(max_iterations),
        iteration_var=cfg.get("iterationVar", LOOP_DEFAULTS["iterationVar"]),
        item_var=cfg.get("itemVar", LOOP_DEFAULTS["itemVar"]),
        index_var=cfg.get("indexVar", LOOP_DEFAULTS["indexVar"]),
        body=tuple(i for i in body_ids if i in b.entries),
        confirmation=confirmation,
        run_condition=run_condition,
        loop=entry.parent,
        pointer=at,
    )


def _check_file_name(workflow_id: str, file: str, report: Reporter) -> None:
    if file.startswith("<"):
        return
    name = file.replace("\\", "/").rsplit("/", 1)[-1]
    stem = name[:-5] if name.endswith(".json") else name
    if stem != workflow_id:
        report.warning(
            "H207",
            f"workflow id `{workflow_id}` differs from the file name `{name}`",
            "/id",
            f"rename the file to `{workflow_id}.json`",
            None,
        )


__all__ = ["KEY", "build_workflow"]


def _too_deep_for_orjson(document: Any) -> bool:
    """Whether `document` nests deeper than the 254 levels orjson (and so workflow_get) takes."""
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > 254:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, dict | list))
    return False
