"""A loop step compiled: its kind, condition, count or items, and their problems
(H203 to H205, H209, H405)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from handrail.compiler.names import LOOP_DEFAULTS
from handrail.compiler.steps import Entry, Steps
from handrail.model.errors import Reporter
from handrail.model.workflow import Condition, Loop, Parallel

MAX_ITERATIONS = 1000


class Build(Protocol):
    """What a loop takes from the workflow being compiled (compiler/build.py's Build)."""

    @property
    def report(self) -> Reporter: ...

    @property
    def steps(self) -> Steps: ...

    def condition(self, raw: Mapping[str, Any], key: str, at: str, what: str) -> Condition | None: ...


def compile_loop(
    b: Build,
    entry: Entry,
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
    count = _count(b, cfg, kind, sid, where, max_iterations)
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
    parallel = _parallel(b, cfg, sid, kind, entry.parent, where)
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
        body=tuple(i for i in body_ids if i in b.steps.entries),
        confirmation=confirmation,
        run_condition=run_condition,
        loop=entry.parent,
        pointer=at,
        parallel=parallel,
    )


def _count(b: Build, cfg: Mapping[str, Any], kind: str, sid: str, where: str, max_iterations: Any) -> Any:
    """A loop's `count` (a `for` loop's: a whole number or a variable), its problems reported."""
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
    return count


PARALLEL_FIELDS = ("maxParallel", "atLeast", "as")
DEFAULT_MAX_PARALLEL = 8


def _parallel(
    b: Build, cfg: Mapping[str, Any], sid: str, kind: str, parent: str | None, where: str
) -> Parallel | None:
    """A parallel loop's settings (H213 where it cannot be one); None for a sequential loop."""
    if not cfg.get("parallel"):
        for name in PARALLEL_FIELDS:
            if name in cfg:
                said = f'`{name}` has no effect without "parallel": true'
                b.report.warning("H405", said, f"{where}/{name}")
        return None
    if kind != "forEach":
        b.report.error(
            "H213",
            f"a `{kind}` loop cannot be parallel: only a `forEach` loop has items to branch on",
            f"{where}/parallel",
            'use "type": "forEach" with "items", or remove "parallel"',
        )
        return None
    if parent is not None:
        b.report.error(
            "H213",
            f"parallel loop `{sid}` is inside loop `{parent}`: a parallel loop must be at the top level",
            f"{where}/parallel",
            "move it out of the enclosing loop, or make it sequential",
        )
        return None
    at_least = cfg.get("atLeast")
    max_iterations = cfg.get("maxIterations")
    if isinstance(at_least, int) and isinstance(max_iterations, int | float) and at_least > max_iterations:
        b.report.error(
            "H213",
            f"atLeast is {at_least}, more than the {int(max_iterations)} branches maxIterations allows",
            f"{where}/atLeast",
            "lower atLeast or raise maxIterations",
        )
    return Parallel(
        max_parallel=int(cfg.get("maxParallel", DEFAULT_MAX_PARALLEL)),
        at_least=int(at_least) if isinstance(at_least, int) else None,
        results_var=str(cfg.get("as", sid)),
    )
