"""The step graph of a compiled workflow, as Mermaid or Graphviz dot text.

Pure: a Workflow in, text out. The graph is a control-flow picture of what
`workflow_next` does:

- a start and an end node, and the top-level steps in file order;
- a step (or loop) with a `runCondition` is entered by an edge labelled
  `when <condition>`, with a dashed `otherwise` edge around it;
- a loop is a subgraph titled with its title, kind, bound and iteration limit; its
  head node (a hexagon) is where each iteration's test is made: it leads into the
  body, the body's end leads back to it (`next …`), and `done` leads on;
- a step that asks for confirmation has a thick (Mermaid) or double (dot) border
  and says so.

Both forms are built from one intermediate graph, so they cannot drift apart.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from handrail.model.workflow import Condition, Loop, Step, Workflow

Format = Literal["mermaid", "dot"]
WRAP = 40  # label lines are wrapped at this many characters

NodeKind = Literal["start", "end", "step", "confirm", "head", "join"]
EdgeStyle = Literal["normal", "skip", "back"]


@dataclass(slots=True)
class DiagramNode:
    key: str
    kind: NodeKind
    lines: list[str]


@dataclass(slots=True)
class Cluster:
    key: str
    lines: list[str]  # the title
    members: list[DiagramNode | Cluster] = field(default_factory=list)


@dataclass(slots=True)
class Edge:
    source: str
    target: str
    label: str | None
    style: EdgeStyle = "normal"


@dataclass(slots=True)
class Graph:
    title: str
    root: list[DiagramNode | Cluster]
    edges: list[Edge]


@dataclass(frozen=True, slots=True)
class _Pending:
    """An edge waiting for the node that comes next."""

    source: str
    label: str | None = None
    style: EdgeStyle = "normal"


def wrap(text: str, width: int = WRAP) -> list[str]:
    """`text` as display lines: its own line breaks kept, long lines wrapped at spaces."""
    lines: list[str] = []
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        clean = "".join(c if c.isprintable() else " " for c in raw).strip()
        lines.extend(_balanced(clean, width))
    while len(lines) > 1 and not lines[-1]:
        lines.pop()
    return lines


def _balanced(text: str, width: int) -> list[str]:
    """Wrapped in as few lines as at `width`, but of even lengths: no one-word last line."""
    lines = textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False) or [""]
    if len(lines) > 1:
        for narrower in range(-(-len(text) // len(lines)), width):
            candidate = textwrap.wrap(text, narrower, break_long_words=False, break_on_hyphens=False)
            if len(candidate) == len(lines):
                return candidate
    return lines


def loop_bound(loop: Loop) -> str:
    """How a loop iterates, in words: `forEach part in planParts`, `while <cond>`, `for 3`."""
    if loop.kind == "forEach":
        return f"forEach {loop.item_var} in {loop.items}"
    if loop.kind == "for":
        return f"for {loop.count}"
    condition = loop.condition.text if loop.condition is not None else "false"
    return f"{loop.kind} {condition}"


class _Builder:
    def __init__(self, workflow: Workflow, titles: Mapping[str, str] | None = None) -> None:
        self.workflow = workflow
        self.titles = titles or {}
        self.edges: list[Edge] = []
        self.keys: set[str] = set()
        self.joins = 0

    def key(self, prefix: str, name: str) -> str:
        base = prefix + re.sub(r"[^A-Za-z0-9_]", "_", name)
        key, n = base, 1
        while key in self.keys:
            n += 1
            key = f"{base}_{n}"
        self.keys.add(key)
        return key

    def connect(self, frontier: list[_Pending], target: str, when: str | None = None) -> None:
        for p in frontier:
            label = p.label
            if when is not None:
                label = f"{label}, {when}" if label else when
            self.edges.append(Edge(p.source, target, label, p.style))

    def join(self, frontier: list[_Pending], into: list[DiagramNode | Cluster]) -> list[_Pending]:
        """Several edges made one, before a conditional node: keeps the graph linear."""
        if len(frontier) <= 1:
            return frontier
        self.joins += 1
        key = self.key("join_", str(self.joins))
        into.append(DiagramNode(key, "join", []))
        self.connect(frontier, key)
        return [_Pending(key)]

    def sequence(
        self, ids: tuple[str, ...], into: list[DiagramNode | Cluster], frontier: list[_Pending]
    ) -> list[_Pending]:
        for sid in ids:
            node = self.workflow.nodes[sid]
            condition = node.run_condition
            if condition is not None:
                frontier = self.join(frontier, into)
            when = f"when {condition.text}" if condition is not None else None
            if isinstance(node, Step):
                entry = self.step(node, into)
                self.connect(frontier, entry, when)
                after = [_Pending(entry)]
            else:
                cluster, entry = self.loop(node, into)
                self.connect(frontier, entry, when)
                self.body(node, cluster, entry)
                after = [_Pending(entry, "done")]
            if condition is not None:
                (before,) = frontier
                label = f"{before.label}, otherwise" if before.label else "otherwise"
                after.append(_Pending(before.source, label, "skip"))
            frontier = after
        return frontier

    def step(self, step: Step, into: list[DiagramNode | Cluster]) -> str:
        key = self.key("step_", step.id)
        lines = [*wrap(self.titles.get(step.id, step.title)), f"({step.id})"]
        confirmation = _confirmation(step.confirmation)
        if confirmation is not None:
            lines.extend(wrap(confirmation))
        into.append(DiagramNode(key, "confirm" if confirmation is not None else "step", lines))
        return key

    def loop(self, loop: Loop, into: list[DiagramNode | Cluster]) -> tuple[Cluster, str]:
        cluster = Cluster(
            self.key("loop_", loop.id),
            [*wrap(loop.title), *wrap(f"{loop_bound(loop)} · max {loop.max_iterations}")],
        )
        into.append(cluster)
        head = self.key("head_", loop.id)
        cluster.members.append(DiagramNode(head, "head", [loop.id]))
        return cluster, head

    def body(self, loop: Loop, cluster: Cluster, head: str) -> None:
        """The loop's body, entered from its head and leading back to it."""
        body_end = self.sequence(loop.body, cluster.members, [_Pending(head)])
        again = f"next {loop.item_var}" if loop.kind == "forEach" else "next iteration"
        for p in body_end:
            if p.source == head:  # an empty body (or one wholly skipped) goes straight on
                continue
            self.edges.append(Edge(p.source, head, p.label or again, "skip" if p.label else "back"))


def _confirmation(value: bool | Condition) -> str | None:
    if value is True:
        return "requires confirmation"
    if isinstance(value, Condition):
        if value.constant is False:
            return None
        if value.constant is True:
            return "requires confirmation"
        return f"requires confirmation when {value.text}"
    return None


def build(workflow: Workflow, titles: Mapping[str, str] | None = None) -> Graph:
    """The intermediate graph both renderers draw. `titles`: a step's title to show instead
    of its own (a run's, with a loop's templates filled for its iteration)."""
    builder = _Builder(workflow, titles)
    root: list[DiagramNode | Cluster] = [DiagramNode("wf_start", "start", ["Start"])]
    builder.keys.update({"wf_start", "wf_end"})
    frontier = builder.sequence(workflow.sequence, root, [_Pending("wf_start")])
    root.append(DiagramNode("wf_end", "end", ["End"]))
    builder.connect(frontier, "wf_end")
    return Graph(f"{workflow.name} ({workflow.id} {workflow.version})", root, builder.edges)


# ---------------------------------------------------------------- Mermaid

_MERMAID_ENTITIES = {
    "#": "#35;",  # first: the entities below use it
    "&": "#amp;",
    '"': "#quot;",
    "<": "#lt;",
    ">": "#gt;",
    "|": "#124;",
    "`": "#96;",
    "\\": "#92;",
}


def mermaid_text(lines: list[str]) -> str:
    """Lines as the inside of a Mermaid quoted label: entity codes for the characters
    that Mermaid (or the HTML it renders) would read, `<br/>` between lines."""
    return "<br/>".join("".join(_MERMAID_ENTITIES.get(c, c) for c in line) for line in lines)


_MERMAID_SHAPES = {
    "start": ('(["', '"])'),
    "end": ('(["', '"])'),
    "step": ('["', '"]'),
    "confirm": ('["', '"]'),
    "head": ('{{"', '"}}'),
    "join": ('(("', '"))'),
}
_MERMAID_CLASSES = {
    "start": "terminal",
    "end": "terminal",
    "confirm": "confirm",
    "head": "head",
    "join": "join",
}
_MERMAID_STYLES = {
    "terminal": "fill:#eeeeee,stroke:#555555",
    "confirm": "stroke:#b45309,stroke-width:3px",
    "head": "fill:#e0ecff,stroke:#3b5b9a",
    "join": "fill:#555555,stroke:#555555",
}
_MERMAID_ARROWS = {"normal": "-->", "skip": "-.->", "back": "-->"}


def to_mermaid(workflow: Workflow, titles: Mapping[str, str] | None = None) -> str:
    graph = build(workflow, titles)
    out = ["---", f"title: {_yaml_string(graph.title)}", "---", "flowchart TD"]
    classes: dict[str, list[str]] = {}

    def emit(members: list[DiagramNode | Cluster], indent: str) -> None:
        for member in members:
            if isinstance(member, Cluster):
                # one line: Mermaid leaves room above the nodes for one line of a subgraph's
                # title only, so a second line would be drawn under the loop's head node
                title = [" · ".join(line for line in member.lines if line)]
                out.append(f'{indent}subgraph {member.key} ["{mermaid_text(title)}"]')
                emit(member.members, indent + "    ")
                out.append(f"{indent}end")
                continue
            opening, closing = _MERMAID_SHAPES[member.kind]
            text = mermaid_text(member.lines) if member.lines else " "
            out.append(f"{indent}{member.key}{opening}{text}{closing}")
            style_class = _MERMAID_CLASSES.get(member.kind)
            if style_class is not None:
                classes.setdefault(style_class, []).append(member.key)

    emit(graph.root, "    ")
    for edge in graph.edges:
        arrow = _MERMAID_ARROWS[edge.style]
        label = f'|"{mermaid_text(wrap(edge.label))}"|' if edge.label else ""
        out.append(f"    {edge.source} {arrow}{label} {edge.target}")
    back = [str(i) for i, edge in enumerate(graph.edges) if edge.style == "back"]
    if back:
        out.append(f"    linkStyle {','.join(back)} stroke:#3b5b9a,color:#3b5b9a")
    for name, keys in classes.items():
        out.append(f"    classDef {name} {_MERMAID_STYLES[name]}")
        out.append(f"    class {','.join(keys)} {name}")
    return "\n".join(out) + "\n"


def _yaml_string(text: str) -> str:
    return '"' + " ".join(text.split()).replace("\\", "\\\\").replace('"', '\\"') + '"'


# ---------------------------------------------------------------- dot


def dot_string(text: str) -> str:
    """A dot quoted string. Only `"` and `\\` are special in one (for a non-record shape,
    `|`, `{}` and `<>` are plain text)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dot_label(lines: list[str]) -> str:
    return dot_string("\n".join(lines)).replace("\n", "\\n")


_DOT_NODES = {
    "start": 'shape=box, style="rounded,filled", fillcolor="#eeeeee"',
    "end": 'shape=box, style="rounded,filled", fillcolor="#eeeeee"',
    "step": "shape=box",
    "confirm": 'shape=box, peripheries=2, color="#b45309"',
    "head": 'shape=hexagon, style=filled, fillcolor="#e0ecff"',
    "join": "shape=point, width=0.08",
}
_DOT_EDGES = {"normal": "", "skip": "style=dashed", "back": 'color="#3b5b9a", fontcolor="#3b5b9a"'}


def to_dot(workflow: Workflow) -> str:
    graph = build(workflow)
    out = [
        f"digraph {dot_string(workflow.id)} {{",
        f"    label={dot_label(wrap(graph.title, 80))};",
        "    labelloc=t;",
        '    fontname="Helvetica";',
        '    node [fontname="Helvetica", fontsize=11];',
        '    edge [fontname="Helvetica", fontsize=10];',
    ]

    def emit(members: list[DiagramNode | Cluster], indent: str) -> None:
        for member in members:
            if isinstance(member, Cluster):
                out.append(f"{indent}subgraph cluster_{member.key} {{")
                out.append(f"{indent}    label={dot_label(member.lines)};")
                out.append(f'{indent}    style="rounded,dashed";')
                emit(member.members, indent + "    ")
                out.append(f"{indent}}}")
                continue
            label = dot_label(member.lines) if member.lines else '""'
            out.append(f"{indent}{member.key} [label={label}, {_DOT_NODES[member.kind]}];")

    emit(graph.root, "    ")
    for edge in graph.edges:
        attributes = [f"label={dot_label(wrap(edge.label))}"] if edge.label else []
        if _DOT_EDGES[edge.style]:
            attributes.append(_DOT_EDGES[edge.style])
        suffix = f" [{', '.join(attributes)}]" if attributes else ""
        out.append(f"    {edge.source} -> {edge.target}{suffix};")
    out.append("}")
    return "\n".join(out) + "\n"


def render(workflow: Workflow, fmt: Format = "mermaid") -> str:
    if fmt == "dot":
        return to_dot(workflow)
    if fmt == "mermaid":
        return to_mermaid(workflow)
    raise ValueError(f"unknown graph format: {fmt!r}")
