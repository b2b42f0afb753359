"""The baseline for `next`: the whole answer handrail gives (step, composed guidance,
loop variables, `completedSteps`, `state`, `missingContext`, `missingKinds`, the steps'
`checks`), worked out from the raw workflow JSON on every call, the way a per-request
engine does: index the steps, walk the dicts, evaluate conditions by interpreting them
(benchmarks/naive.py, and here in three-valued logic for what is still undecided),
parse each condition again to show it, compile each step's rules again to describe them.

The meaning is handrail's (spec/engine.md); tests/benchmarks checks that both give
the same answer on every workload, so the comparison is of like with like.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.naive import MISSING, _literal, _tree_holds, holds
from handrail.engine.templates import render  # per call in both: a regex substitution
from handrail.expr.ast import literals_for, to_text, variables
from handrail.expr.parse import _parser, parse_condition
from handrail.model.errors import IGNORE as ignore
from handrail.rules.closures import compile_criteria, criteria_text

DEFAULTS = {"iterationVar": "currentIteration", "itemVar": "currentItem", "indexVar": "currentIndex"}


@dataclass
class _Index:
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    parent: dict[str, str | None] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)

    def body(self, loop: dict[str, Any]) -> list[str]:
        raw = loop["body"]
        ids = [raw] if isinstance(raw, str) else [s["id"] for s in raw]
        return [i for i in ids if i in self.nodes]


def _index(document: dict[str, Any]) -> _Index:
    index = _Index()

    def collect(steps: list[dict[str, Any]], parent: str | None) -> None:
        for raw in steps:
            index.nodes[raw["id"]] = raw
            index.parent[raw["id"]] = parent
            index.order.append(raw["id"])
            if raw.get("type") == "loop" and isinstance(raw["body"], list):
                collect(raw["body"], raw["id"])

    collect(document["steps"], None)
    for sid in index.order:
        raw = index.nodes[sid]
        if raw.get("type") == "loop" and isinstance(raw["body"], str):
            index.parent[raw["body"]] = sid
    return index


def _looks_for(condition: Any) -> list[tuple[str, list[Any]]]:
    tree = parse_condition(condition, "", ignore)
    return [(name, literals_for(tree, name)) for name in variables(tree)]


def _decide(condition: Any, scope: dict[str, Any]) -> tuple[bool | None, list[str]]:
    """The condition in three-valued logic (an unset variable is unknown), interpreted
    from its raw form: (its value, or None when unknown; the unset variables that could
    still change it). `and` is false as soon as one part is false, `or` true as soon as
    one part is true."""
    if not condition:
        return True, []
    if isinstance(condition, str):
        return _decide_tree(_parser().parse(condition), scope)
    if "and" in condition:
        return _combine([_decide(c, scope) for c in condition["and"]], False)
    if "or" in condition:
        return _combine([_decide(c, scope) for c in condition["or"]], True)
    if "not" in condition:
        value, names = _decide(condition["not"], scope)
        return (None if value is None else not value), names
    if _lookup(scope, condition["var"]) is MISSING:
        return None, [condition["var"]]
    return holds(condition, scope), []


def _decide_tree(tree: Any, scope: dict[str, Any]) -> tuple[bool | None, list[str]]:
    kind = tree.data
    if kind in ("or_expr", "and_expr"):
        return _combine([_decide_tree(c, scope) for c in tree.children], kind == "or_expr")
    if kind == "negation":
        value, names = _decide_tree(tree.children[0], scope)
        return (None if value is None else not value), names
    if kind == "constant":
        return bool(_literal(tree.children[0])), []
    name = ".".join(str(t) for t in tree.children[0].children)
    if _lookup(scope, name) is MISSING:
        return None, [name]
    return _tree_holds(tree, scope), []


def _combine(parts: list[tuple[bool | None, list[str]]], deciding: bool) -> tuple[bool | None, list[str]]:
    names: list[str] = []
    for value, unknown in parts:
        if value is deciding:
            return deciding, []
        if value is None:
            names.extend(n for n in unknown if n not in names)
    return (None, names) if names else (not deciding, [])


def _undecided(condition: Any, scope: dict[str, Any]) -> list[str]:
    return _decide(condition, scope)[1]


def _lookup(scope: dict[str, Any], path: str) -> Any:
    """A dotted path; lists take numeric parts, and `length` of a list or string."""
    value: Any = scope
    for part in path.split("."):
        if isinstance(value, dict):
            value = value.get(part, MISSING)
        elif isinstance(value, list | str) and part == "length":
            value = len(value)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return MISSING
        if value is MISSING:
            return MISSING
    return value


@dataclass
class _Frame:
    loop: dict[str, Any]
    iteration: int

    def variables(self, scope: dict[str, Any]) -> dict[str, Any]:
        cfg = self.loop["loop"]
        out: dict[str, Any] = {
            cfg.get("iterationVar", DEFAULTS["iterationVar"]): self.iteration,
            cfg.get("indexVar", DEFAULTS["indexVar"]): self.iteration - 1,
        }
        if cfg["type"] == "forEach":
            items = _lookup(scope, cfg.get("items") or "")
            if isinstance(items, list) and self.iteration - 1 < len(items):
                out[cfg.get("itemVar", DEFAULTS["itemVar"])] = items[self.iteration - 1]
        return out


@dataclass
class _Walk:
    index: _Index
    context: dict[str, Any]
    completed: list[str]
    done: set[str]
    frames: list[_Frame]
    waiting: dict[str, list[Any]] = field(default_factory=dict)
    unusable: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, tuple[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    waits: int = 0
    stalled: bool = False
    depth: int = 0

    def scope(self, depth: int) -> dict[str, Any]:
        merged = dict(self.context)
        for frame in self.frames[:depth]:
            merged.update(frame.variables(merged))
        return merged

    def wait(self, name: str, wanted: Sequence[Any] = (), unusable: str | None = None) -> None:
        values = self.waiting.setdefault(name, [])
        values.extend(v for v in wanted if v not in values)
        if unusable:
            self.unusable[name] = unusable
        self.waits += 1

    def skipped(self, condition: Any, scope: dict[str, Any]) -> None:
        undecided = _undecided(condition, scope)  # only what could change the outcome
        for name, wanted in _looks_for(condition):
            if name in undecided:
                self.wait(name, wanted)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def finish(self, sid: str) -> None:
        if sid not in self.done:
            self.done.add(sid)
            self.completed.append(sid)

    def descendants(self, loop: dict[str, Any]) -> set[str]:
        out: set[str] = set()
        stack = self.index.body(loop)
        while stack:
            sid = stack.pop()
            out.add(sid)
            node = self.index.nodes.get(sid)
            if node is not None and node.get("type") == "loop":
                stack.extend(self.index.body(node))
        return out

    def forget_body(self, loop: dict[str, Any]) -> None:
        inner = self.descendants(loop)
        self.completed[:] = [s for s in self.completed if s not in inner]
        self.done -= inner

    def end(self, loop: dict[str, Any]) -> None:
        self.forget_body(loop)
        self.frames.pop()
        self.finish(loop["id"])

    def walk(self, sequence: Sequence[str], depth: int) -> dict[str, Any] | None:
        scope = self.scope(depth)
        for sid in sequence:
            if sid in self.done:
                continue
            node = self.index.nodes[sid]
            if node.get("type") != "loop":
                condition = node.get("runCondition")
                if condition is None or holds(condition, scope):
                    self.depth = depth
                    return node
                self.skipped(condition, scope)
                continue
            found = self.run_loop(node, depth, scope)
            if found is not None or self.stalled:
                return found
        return None

    def run_loop(self, loop: dict[str, Any], depth: int, scope: dict[str, Any]) -> dict[str, Any] | None:
        if len(self.frames) > depth and self.frames[depth].loop["id"] != loop["id"]:
            return None
        limit = int(loop["loop"]["maxIterations"])
        if len(self.frames) <= depth:
            condition = loop.get("runCondition")
            if condition is not None and not holds(condition, scope):
                self.skipped(condition, scope)
                return None
            self.frames.append(_Frame(loop, 1))
            verdict = self.may_iterate(depth)
            if verdict is None:
                self.frames.pop()
                self.stalled = True
                return None
            if not verdict:
                self.end(loop)
                return None
        frame = self.frames[depth]
        body = self.index.body(loop)
        for _ in range(limit + 1):
            waits = self.waits
            found = self.walk(body, depth + 1)
            if found is not None or self.stalled:
                return found
            if self.waits != waits:
                self.stalled = True
                return None
            del self.frames[depth + 1 :]
            frame.iteration += 1
            if frame.iteration > limit:
                if self.may_iterate(depth, record=False):
                    self.note(f"Loop `{loop['id']}` stopped at its limit of {limit} iterations.")
                self.end(loop)
                return None
            verdict = self.may_iterate(depth)
            if verdict is None:
                frame.iteration -= 1
                self.stalled = True
                return None
            self.forget_body(loop)
            if not verdict:
                self.end(loop)
                return None
        raise AssertionError("unreachable")

    def may_iterate(self, depth: int, *, record: bool = True) -> bool | None:
        frame = self.frames[depth]
        cfg = frame.loop["loop"]
        kind = cfg["type"]
        outer, scope = self.scope(depth), self.scope(depth + 1)
        if kind in ("while", "until"):
            condition = cfg.get("condition")
            if condition is None:
                return False
            now = holds(condition, scope)
            if kind == "until":
                return not now
            if now:
                return True
            if frame.iteration == 1 and _undecided(condition, scope):
                if record:
                    self.skipped(condition, scope)
                return None
            return False
        if kind == "for":
            count = cfg.get("count")
            if isinstance(count, str):
                count = _lookup(outer, count)
                if isinstance(count, str) and count.strip().isdigit():
                    count = int(count)
            if not isinstance(count, int | float) or isinstance(count, bool):
                if record:
                    self.wait(str(cfg.get("count")), (), _unusable(count, "a number"))
                    self.kinds.setdefault(str(cfg.get("count")), ("number", frame.loop["id"]))
                return None
            return bool(frame.iteration <= count)
        items = _lookup(outer, cfg.get("items") or "")
        if not isinstance(items, list):
            if record:
                self.wait(str(cfg.get("items")), (), _unusable(items, "a list"))
                self.kinds.setdefault(str(cfg.get("items")), ("list", frame.loop["id"]))
            return None
        return frame.iteration <= len(items)


def _unusable(value: Any, wanted: str) -> str | None:
    if value is MISSING:
        return None
    if value is None:
        kind = "null"
    elif isinstance(value, bool):
        kind = "a boolean"
    elif isinstance(value, int | float):
        kind = "a number"
    elif isinstance(value, str):
        kind = "a string"
    elif isinstance(value, list):
        kind = "a list"
    else:
        kind = "an object"
    return f"it is {kind}, it must be {wanted}"


def _confirmation(value: Any, scope: dict[str, Any]) -> bool:
    return value if isinstance(value, bool) else holds(value, scope)


def _view(step: dict[str, Any], scope: dict[str, Any]) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": step["id"],
        "title": render(step["title"], scope),
        "prompt": render(step["prompt"], scope),
    }
    if step.get("agentRole"):
        view["agentRole"] = render(step["agentRole"], scope)
    if step.get("guidance"):
        view["guidance"] = [render(g, scope) for g in step["guidance"]]
    view["askForFiles"] = bool(step.get("askForFiles", False))
    view["requireConfirmation"] = _confirmation(step.get("requireConfirmation", False), scope)
    if "runCondition" in step:
        view["runCondition"] = to_text(parse_condition(step["runCondition"], "", ignore))
    if step.get("functionReferences"):
        view["functionReferences"] = list(step["functionReferences"])
    shown = [
        f"{check['message']} ({_check_description(check)})"
        for check in step.get("checks") or ()
        if "condition" not in check or holds(check["condition"], scope)
    ]
    if shown:
        view["checks"] = shown
    return view


def _check_description(check: dict[str, Any]) -> str:
    """What a check looks for, in words, from its raw JSON."""
    if check["type"] == "command":
        run = check["run"]
        expected = f"exits with {int(check.get('exitCode', 0))}"
        if isinstance(run, dict):
            return f"the configured command `{run['command']}` {expected}"
        return f"`{shlex.join(run)}` {expected}"
    if check["type"] == "file":
        text = f"a file matches `{check['path']}`"
        if "contains" in check:
            text += f" and one of them contains /{check['contains']}/"
        return text
    parts = []
    if check.get("changes"):
        parts.append("the workspace has changes since the run began")
    if check.get("clean"):
        parts.append("nothing is left uncommitted")
    text = " and ".join(parts)
    if check.get("paths"):
        text += " (in " + ", ".join(f"`{p}`" for p in check["paths"]) + ")"
    return text


def _guidance(
    document: dict[str, Any],
    step: dict[str, Any],
    view: dict[str, Any],
    loops: list[tuple[_Frame, dict[str, Any]]],
    first: bool,
    notes: list[str],
) -> dict[str, Any]:
    parts: list[str] = []
    if first:
        parts.append(f"Workflow: {document['name']} — {document['description']}")
        if document.get("metaGuidance"):
            parts.append(
                "Throughout this workflow:\n" + "\n".join(f"- {g}" for g in document["metaGuidance"])
            )
    if step.get("agentRole"):
        parts.append(view["agentRole"])
    parts.append(f"## {view['title']}\n{view['prompt']}")
    if step.get("guidance"):
        parts.append("Guidance:\n" + "\n".join(f"- {g}" for g in view["guidance"]))
    for frame, variables_ in loops:
        cfg = frame.loop["loop"]
        line = f"Loop `{frame.loop['title']}`: iteration {frame.iteration} (at most {cfg['maxIterations']})"
        if cfg["type"] == "forEach":
            item_var = cfg.get("itemVar", DEFAULTS["itemVar"])
            index_var = cfg.get("indexVar", DEFAULTS["indexVar"])
            item = json.dumps(variables_.get(item_var), ensure_ascii=False, default=str)
            line += f"; {item_var} = {item} ({index_var} = {frame.iteration - 1})"
        parts.append(line)
    criteria: list[str] = []
    if "validationCriteria" in step:
        criteria = [criteria_text(r) for r in compile_criteria(step["validationCriteria"], "", ignore)]
    if criteria:
        parts.append("Your output must meet:\n" + "\n".join(f"- {c}" for c in criteria))
    if "checks" in view:
        listed = "\n".join(f"- {c}" for c in view["checks"])
        parts.append(f"In a run, the server verifies for itself:\n{listed}")
    parts.extend(notes)
    guidance: dict[str, Any] = {"prompt": "\n\n".join(parts)}
    hint = step.get("modelHint") or document.get("modelHint")
    if hint:
        guidance["modelHint"] = hint
    guidance["requiresConfirmation"] = view["requireConfirmation"]
    guidance["validationCriteria"] = criteria
    return guidance


def next_full(
    document: dict[str, Any],
    completed: list[str],
    context: dict[str, Any],
    state: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """handrail's `next_step` answer for valid input (no error checking: the workloads
    send none)."""
    index = _index(document)
    frames = [_Frame(index.nodes[f["id"]], f["iteration"]) for f in (state or {}).get("loops", [])]
    walk = _Walk(index, dict(context), list(dict.fromkeys(completed)), set(completed), frames)
    sequence = [sid for sid in index.order if index.parent[sid] is None]
    step = walk.walk(sequence, 0)
    result: dict[str, Any] = {
        "completedSteps": walk.completed,
        "state": {"loops": [{"id": f.loop["id"], "iteration": f.iteration} for f in walk.frames]},
    }
    if step is not None:
        depth = walk.depth
        scope = walk.scope(depth)
        enclosing = [(f, f.variables(walk.scope(i))) for i, f in enumerate(walk.frames[:depth])]
        view = result["step"] = _view(step, scope)
        result["guidance"] = _guidance(document, step, view, enclosing, not completed, walk.notes)
        result["isComplete"] = False
        for frame, _ in enclosing:
            entering = frame.iteration == 1 and not walk.done.intersection(index.body(frame.loop))
            if entering and _confirmation(frame.loop.get("requireConfirmation", False), scope):
                result["guidance"]["requiresConfirmation"] = True
        if enclosing:
            frame, loop_vars = enclosing[-1]
            result["loop"] = {
                "id": frame.loop["id"],
                "title": frame.loop["title"],
                "iteration": frame.iteration,
                **loop_vars,
            }
        return result
    result["step"] = None
    if walk.waiting:
        lines = []
        for name, values in walk.waiting.items():
            line = f"- `{name}`"
            if values:
                wanted = ", ".join(json.dumps(v, ensure_ascii=False) for v in values)
                line += f" (the conditions look for {wanted})"
            if name in walk.unusable:
                line += f" ({walk.unusable[name]})"
            elif name in walk.kinds:
                kind, loop_id = walk.kinds[name]
                if kind == "number":
                    line += f" (a number: loop `{loop_id}` runs that many times)"
                else:
                    line += f" (a JSON list: loop `{loop_id}` goes through it)"
            lines.append(line)
        prompt = (
            "No remaining step can run yet: their conditions read context variables that are not set.\n"
            "Set these in `context` and call workflow_next again:\n" + "\n".join(lines)
        )
        result["isComplete"] = False
        result["guidance"] = {
            "prompt": "\n\n".join([prompt, *walk.notes]),
            "requiresConfirmation": False,
            "validationCriteria": [],
            "missingContext": {name: list(values) for name, values in walk.waiting.items()},
        }
        if walk.kinds:
            result["guidance"]["missingKinds"] = {
                name: kind for name, (kind, _) in walk.kinds.items() if name in walk.waiting
            }
    else:
        result["isComplete"] = True
        text = f"Workflow `{document['name']}` is complete: every step that applies is done."
        result["guidance"] = {
            "prompt": " ".join([text, *walk.notes]),
            "requiresConfirmation": False,
            "validationCriteria": [],
        }
    return result
