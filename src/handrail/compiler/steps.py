"""The steps of a workflow, found once: every step by id with its place, and which loop
each belongs to (nested in its body, or named by `body`), with the problems of ids and
loop bodies reported (H200 to H202, H208)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from handrail.expr import Reporter, did_you_mean


@dataclass
class Entry:
    raw: Mapping[str, Any]
    pointer: str
    parent: str | None  # enclosing loop id
    functions: tuple[str, ...]  # functions visible from here (loop scopes)

    def nest(self, parent: str, functions: tuple[str, ...]) -> None:
        """The step is the body of loop `parent`, and sees the functions of its scope."""
        self.parent = parent
        self.functions = functions


@dataclass
class Steps:
    report: Reporter
    entries: dict[str, Entry] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    owner: dict[str, str] = field(default_factory=dict)  # body step id -> loop id

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
            self.entries[sid] = Entry(raw, pointer, parent, functions)
            self.order.append(sid)
            if raw.get("type") == "loop":
                own = functions + function_names(raw.get("functionDefinitions"))
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
                self.entries[body].nest(sid, entry.functions + function_names(raw.get("functionDefinitions")))
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


def function_names(defs: Any) -> tuple[str, ...]:
    return tuple(d["name"] for d in defs or () if isinstance(d, Mapping) and "name" in d)
