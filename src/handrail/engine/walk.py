"""The walk behind workflow_next: through the step graph in order, loops run from the
state the client sent back, until the first step that is not done and may run now.

At the top level the walk reads the compiler's plan (engine/derived.py): ids, steps
and runCondition tests side by side. `scan` goes along it; the usual call (no loop
running, `first_step`) is answered by that scan alone when it stops at a step, and
handed to a whole `Walk` otherwise, which scans the same plan from the start.

Spec: spec/engine.md (loops §2, what waits on the context §1). `next.py` turns a
finished walk into the answer.
"""

from __future__ import annotations

import math
from collections import ChainMap
from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from handrail.engine.derived import PlanEntry, derived
from handrail.engine.results import LoopNeed
from handrail.engine.state import Frame
from handrail.expr import MISSING, lookup
from handrail.expr.semantics import is_number
from handrail.model import budget
from handrail.model.errors import json_kind
from handrail.model.workflow import Condition, Context, Loop, Step, Workflow


def scan(
    plan: tuple[PlanEntry, ...],
    done: Set[str],
    context: Context,
    start: int,
    log: list[tuple[Any, Any, Any]] | None,
    past_loops: bool,
) -> int:
    """From `start`, where the first top-level step or loop not done that may run is in
    `plan`; its length when there is none. A loop whose runCondition fails is passed
    over only with `past_loops` (no loop is running: a running one goes on whatever
    its runCondition says). What is passed over for its runCondition goes to `log`."""
    for at in range(start, len(plan)):
        sid, step, holds, condition = plan[at]
        if sid in done:
            continue
        if holds is None or holds(context) or (step is None and not past_loops):
            return at
        if log is not None:
            log.append((condition, context, None))
    return len(plan)


def first_step(workflow: Workflow, done: Set[str], context: Context) -> Step | None:
    """The step of a call with no loop running, when the scan finds it before any loop
    that may run; None when the walk has more to say (a loop to run, no step left, a
    step done inside a loop that is not running): a `Walk` then answers."""
    found = derived(workflow)
    if done and not found.in_loops.isdisjoint(done):
        return None  # the walk refuses it (state): the full walk words why
    plan = found.sequence
    at = scan(plan, done, context, 0, None, True)
    return plan[at][1] if at < len(plan) else None


@dataclass(slots=True)
class Walk:
    """One call's walk: what is done, the running loops, and what it waited on."""

    workflow: Workflow
    context: Context
    completed: list[str]
    done: set[str]
    frames: list[Frame]
    waiting: dict[str, list[Any]] = field(default_factory=dict)  # missing variable -> wanted values
    unusable: dict[str, str] = field(default_factory=dict)  # variable set to a value of the wrong kind
    # what waited, in order: (name, wanted values, why unusable) or, for a step skipped
    # outside every loop, (its condition, the scope): which of that condition's variables
    # wait matters only when no step is found, so it is worked out then (`settle`)
    log: list[tuple[Any, Any, Any]] = field(default_factory=list)
    kinds: dict[str, tuple[LoopNeed, str]] = field(default_factory=dict)  # loop variable -> (kind, loop id)
    notes: list[str] = field(default_factory=list)
    waits: int = 0  # how many times something waited on the context; a loop compares before/after
    stalled: bool = False  # a running loop waits on the context: nothing after it may run
    depth: int = 0  # how many running loops enclose the step found
    reads: dict[str, frozenset[str]] = field(default_factory=dict)  # loop id -> its free variables
    ended: dict[str, list[str]] = field(default_factory=dict)  # loop id -> notes of a clean fresh run

    def scope(self, depth: int) -> Context:
        """The context seen at `depth`: loop variables of the running frames over the caller's."""
        if depth == 0:
            return self.context
        layers: dict[str, Any] = {}
        for frame in self.frames[:depth]:
            layers.update(frame.variables(ChainMap(layers, self.context)))  # type: ignore[arg-type]
        return ChainMap(layers, self.context)  # type: ignore[arg-type]  # read-only use

    def wait(self, name: str, wanted: Sequence[Any] = (), unusable: str | None = None) -> None:
        self.log.append((name, wanted, unusable))
        self.waits += 1

    def settle(self) -> None:
        """Fill `waiting` and `unusable` from the log, in the order things waited."""
        self.waiting.clear()
        self.unusable.clear()
        for first, second, third in self.log:
            if isinstance(first, Condition):
                undecided = first.undecided(second)
                entries = [(name, wanted, None) for name, wanted in first.looks_for if name in undecided]
            else:
                entries = [(first, second, third)]
            for name, wanted, unusable in entries:
                values = self.waiting.setdefault(name, [])
                values.extend(v for v in wanted if v not in values)
                if unusable:
                    self.unusable[name] = unusable

    def skipped(self, condition: Condition, scope: Context, depth: int) -> None:
        if depth == 0:
            # outside every loop, what waits changes nothing in the walk (only loops
            # compare `waits`): it is needed only if no step is found
            self.log.append((condition, scope, None))
            return
        for name, _ in condition.looks_for:
            if lookup(scope, name) is MISSING:
                break
        else:
            return  # every variable it reads is set: none of them waits
        # only the unset variables that could change the outcome (spec/engine.md §1)
        undecided = condition.undecided(scope)
        for name, wanted in condition.looks_for:
            if name in undecided:
                self.wait(name, wanted)

    def note(self, text: str) -> None:
        if text not in self.notes:  # a loop run again (inside another) says so once
            self.notes.append(text)

    def finish(self, sid: str) -> None:
        if sid not in self.done:
            self.done.add(sid)
            self.completed.append(sid)

    def forget_body(self, loop: Loop) -> None:
        inner = _descendants(self.workflow, loop)
        self.completed[:] = [s for s in self.completed if s not in inner]
        self.done -= inner

    def end(self, loop: Loop) -> None:
        self.forget_body(loop)
        self.frames.pop()
        self.finish(loop.id)

    def walk(self, sequence: Sequence[str], depth: int) -> Step | None:
        if depth == 0:
            return self.walk_top()
        scope = self.scope(depth)
        for sid in sequence:
            if sid in self.done:
                continue
            node = self.workflow.nodes[sid]
            if isinstance(node, Step):
                if node.run_condition is None or node.run_condition.holds(scope):
                    self.depth = depth
                    return node
                self.skipped(node.run_condition, scope, depth)
                continue
            found = self.run_loop(node, depth, scope)
            if found is not None or self.stalled:
                return found
        return None

    def walk_top(self) -> Step | None:
        """The walk of the top level, along the compiler's plan."""
        plan = derived(self.workflow).sequence
        at = 0
        while True:
            at = scan(plan, self.done, self.context, at, self.log, not self.frames)
            if at == len(plan):
                return None
            sid, step, _, _ = plan[at]
            if step is not None:
                self.depth = 0
                return step
            loop = self.workflow.nodes[sid]
            assert isinstance(loop, Loop)
            found = self.run_loop(loop, 0, self.context)
            if found is not None or self.stalled:
                return found
            at += 1

    def run_loop(self, loop: Loop, depth: int, scope: Context) -> Step | None:
        if len(self.frames) > depth and self.frames[depth].loop.id != loop.id:
            return None  # another loop at this level is running; this one waits its turn
        if len(self.frames) > depth:
            return self.iterate(loop, depth, fresh=False)
        if loop.run_condition is not None and not loop.run_condition.holds(scope):
            self.skipped(loop.run_condition, scope, depth)
            return None
        # a loop that reads nothing the enclosing loops change ends the same way each time
        # it is entered in this call: a loop inside a loop is walked once, not per iteration
        memo = self.ended.get(loop.id) if self.independent_of_frames(loop, depth) else None
        if memo is not None:
            for text in memo:
                self.note(text)
            self.finish(loop.id)
            return None
        waits, notes = self.waits, len(self.notes)
        found = self.start(loop, depth)
        ended = found is None and not self.stalled and self.waits == waits and loop.id in self.done
        if ended and self.independent_of_frames(loop, depth):
            self.ended[loop.id] = self.notes[notes:]
        return found

    def start(self, loop: Loop, depth: int) -> Step | None:
        self.frames.append(Frame(loop, 1))
        verdict = self.may_iterate(depth)
        if verdict is None:
            # the loop is due (its runCondition holds) but the context lacks what it
            # iterates over: later steps depend on its work, so nothing after it runs
            self.frames.pop()
            self.stalled = True
            return None
        if not verdict:
            self.end(loop)
            return None
        return self.iterate(loop, depth, fresh=True)

    def iterate(self, loop: Loop, depth: int, *, fresh: bool) -> Step | None:
        """Run the loop at `depth` from its current iteration until a step is found, the
        walk stalls, or the loop ends.

        An iteration whose body is entirely skipped changes nothing; when the body reads
        none of this loop's variables, every later iteration is skipped too (the context
        is fixed within a call), so the body is not walked again: only the loop's test
        is made, and when that too ignores the loop's variables, the loop goes straight
        to its last iteration (spec/engine.md 2.2)."""
        frame = self.frames[depth]
        fresh = fresh or not (self.done & _descendants(self.workflow, loop))
        skip_body = False
        for _ in range(loop.max_iterations + 1):  # bounded: every pass advances the iteration
            budget.check()
            if not skip_body:
                waits = self.waits
                found = self.walk(loop.body, depth + 1)
                if found is not None or self.stalled:
                    return found
                if self.waits != waits:
                    # a body step (or inner loop) waits on the context: this iteration is not over
                    self.stalled = True
                    return None
                if fresh and self.body_ignores_iteration(loop):
                    skip_body = True
                    if self.test_ignores_iteration(loop):
                        frame.skip_to(self.last_iteration(depth))
                fresh = True  # the next iteration starts with its body not done
            del self.frames[depth + 1 :]
            if frame.advance() > loop.max_iterations:
                if self.may_iterate(depth, record=False):
                    self.note(f"Loop `{loop.id}` stopped at its limit of {loop.max_iterations} iterations.")
                self.end(loop)
                return None
            verdict = self.may_iterate(depth)
            if verdict is None:  # the next iteration waits on the context: stay on this one
                frame.back()
                self.stalled = True
                return None
            self.forget_body(loop)
            if not verdict:
                self.end(loop)
                return None
        raise AssertionError("unreachable: the iteration bound ends every loop")

    def last_iteration(self, depth: int) -> int:
        """The last iteration the loop at `depth` may run, from what the call can see;
        its current one when that cannot be told (the test then decides as usual)."""
        frame = self.frames[depth]
        loop = frame.loop
        if loop.kind in ("while", "until"):
            return loop.max_iterations
        outer = self.scope(depth)
        if loop.kind == "for":
            count: Any = loop.count if not isinstance(loop.count, str) else lookup(outer, loop.count)
            if isinstance(count, str) and count.strip().isdigit():
                count = int(count)
            if not is_number(count):
                return frame.iteration
            if count >= loop.max_iterations:
                return loop.max_iterations
            try:
                last: int = math.floor(count)
            except (ValueError, OverflowError):  # NaN, from a library caller
                return frame.iteration
            return max(frame.iteration, last)
        items = lookup(outer, loop.items or "")
        if not isinstance(items, list):
            return frame.iteration
        return max(frame.iteration, min(len(items), loop.max_iterations))

    def body_ignores_iteration(self, loop: Loop) -> bool:
        return not (_own_variables(loop) & self.free_in(loop.body))

    @staticmethod
    def test_ignores_iteration(loop: Loop) -> bool:
        if loop.kind in ("for", "forEach"):
            return True  # its count or list is read outside the loop: `last_iteration` knows
        return not (_own_variables(loop) & _heads(loop.condition))

    def independent_of_frames(self, loop: Loop, depth: int) -> bool:
        """Whether `loop` reads no variable of the running loops that enclose it."""
        if depth == 0:
            return True
        names: set[str] = set()
        for frame in self.frames[:depth]:
            names |= _own_variables(frame.loop)
        return not (names & self.free_of(loop))

    def free_of(self, loop: Loop) -> frozenset[str]:
        """The variables (first path parts) `loop` reads from the scope that encloses it."""
        found = self.reads.get(loop.id)
        if found is None:
            outside: set[str] = set(_heads(loop.run_condition))
            for name in (loop.count, loop.items):
                if isinstance(name, str):
                    outside.add(name.split(".")[0])
            inside = set(_heads(loop.condition)) | self.free_in(loop.body)
            found = self.reads[loop.id] = frozenset(outside | (inside - _own_variables(loop)))
        return found

    def free_in(self, sequence: Sequence[str]) -> set[str]:
        out: set[str] = set()
        for sid in sequence:
            node = self.workflow.nodes[sid]
            out |= _heads(node.run_condition) if isinstance(node, Step) else self.free_of(node)
        return out

    def may_iterate(self, depth: int, *, record: bool = True) -> bool | None:
        """Whether the frame at `depth` runs its current iteration; None when undecidable."""
        frame = self.frames[depth]
        loop = frame.loop
        outer = self.scope(depth)
        scope = self.scope(depth + 1)
        if loop.kind in ("while", "until"):
            if loop.condition is None:
                return False
            holds = loop.condition.holds(scope)
            if loop.kind == "until":
                return not holds  # checked before every iteration; unset means not yet
            if holds:
                return True
            if frame.iteration == 1 and loop.condition.undecided(scope):
                if record:
                    self.skipped(loop.condition, scope, depth + 1)
                return None  # undecided until the context sets what the condition reads
            return False
        if loop.kind == "for":
            count: Any = loop.count if not isinstance(loop.count, str) else lookup(outer, loop.count)
            if isinstance(count, str) and count.strip().isdigit():
                count = int(count)
            if not is_number(count):
                if record:
                    self.wait(str(loop.count), (), _unusable(count, "a number"))
                    self.kinds.setdefault(str(loop.count), ("number", loop.id))
                return None
            return bool(frame.iteration <= count)
        items = lookup(outer, loop.items or "")
        if not isinstance(items, list):
            if record:
                self.wait(str(loop.items), (), _unusable(items, "a list"))
                self.kinds.setdefault(str(loop.items), ("list", loop.id))
            return None
        return frame.iteration <= len(items)


def _unusable(value: Any, wanted: str) -> str | None:
    """Why a variable that is set cannot drive a loop; None when it is simply not set."""
    if value is MISSING:
        return None
    return f"it is {json_kind(value, array='a list')}, it must be {wanted}"


def _own_variables(loop: Loop) -> set[str]:
    names = {loop.iteration_var, loop.index_var}
    if loop.kind == "forEach":
        names.add(loop.item_var)
    return names


def _heads(condition: Condition | None) -> frozenset[str]:
    if condition is None:
        return frozenset()
    return frozenset(name.split(".")[0] for name in condition.variables)


def _descendants(workflow: Workflow, loop: Loop) -> set[str]:
    out: set[str] = set()
    stack = list(loop.body)
    while stack:
        sid = stack.pop()
        out.add(sid)
        node = workflow.nodes.get(sid)
        if isinstance(node, Loop):
            stack.extend(node.body)
    return out
