"""`handrail graph`: the step graph as Mermaid and dot, checked by snapshot, by a light
structural parser of each syntax, and (when Graphviz is installed) by `dot` itself."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from handrail.catalog import load_catalog
from handrail.cli import main
from handrail.compiler import compile_path, compile_text
from handrail.compiler.graph import (
    Cluster,
    DiagramNode,
    build,
    dot_string,
    loop_bound,
    mermaid_text,
    render,
    to_dot,
    to_mermaid,
    wrap,
)
from handrail.model.workflow import Loop, Step, Workflow
from tests.conftest import BUNDLED, CORPUS, bundled_files, corpus_accepted

LOOPS = CORPUS / "workflows" / "examples" / "loops"
CATALOG = load_catalog()


def bundled(workflow_id: str) -> Workflow:
    workflow = CATALOG.snapshot().get(workflow_id)
    assert workflow is not None
    return workflow


def corpus(path: Path) -> Workflow:
    workflow = compile_path(path).workflow
    assert workflow is not None
    return workflow


def compiled(document: dict[str, Any]) -> Workflow:
    result = compile_text(json.dumps(document))
    assert result.workflow is not None, [d.render() for d in result.errors]
    return result.workflow


TRICKY_TITLE = 'Say "hi" [now] {x} (y) | pipe <b>tag</b> & #35; `tick` \\n\nsecond line'
TRICKY = {
    "id": "tricky-labels",
    "name": 'Tricky "labels" <b>|x|</b>',
    "description": "Every character the two syntaxes care about, and nested loops.",
    "version": "1.0.0",
    "steps": [
        {"id": "odd-title", "title": TRICKY_TITLE, "prompt": "p"},
        {
            "id": "odd-condition",
            "title": "B",
            "prompt": "p",
            "runCondition": "name == 'a|b<c>\"d\"' and flag",
        },
        {
            "id": "outer",
            "type": "loop",
            "title": "Outer <loop>",
            "loop": {"type": "forEach", "items": "groups", "itemVar": "group", "maxIterations": 5},
            "body": [
                {
                    "id": "inner",
                    "type": "loop",
                    "title": "Inner",
                    "loop": {"type": "while", "condition": "more == true", "maxIterations": 3},
                    "body": [{"id": "step-c", "title": "C", "prompt": "p", "runCondition": "x > 1"}],
                },
                {"id": "end", "title": "A step called end", "prompt": "p", "requireConfirmation": True},
            ],
        },
    ],
}


# ---------------------------------------------------------------- light syntax checks

MERMAID_NODE = re.compile(
    r'^(?P<id>[A-Za-z_][A-Za-z0-9_]*)(?P<open>\["|\(\["|\{\{"|\(\(")(?P<label>[^"]*)(?P<close>"\]|"\]\)|"\}\}|"\)\))$'
)
MERMAID_PAIRS = {'["': '"]', '(["': '"])', '{{"': '"}}', '(("': '"))'}
MERMAID_EDGE = re.compile(
    r"^(?P<a>[A-Za-z_][A-Za-z0-9_]*) (?P<arrow>-->|-\.->)"
    r'(?:\|"(?P<label>[^"]*)"\|)? (?P<b>[A-Za-z_][A-Za-z0-9_]*)$'
)
MERMAID_SUBGRAPH = re.compile(r'^subgraph (?P<id>[A-Za-z_][A-Za-z0-9_]*) \["(?P<label>[^"]*)"\]$')


def check_mermaid_label(label: str) -> None:
    """Only entity codes and `<br/>`: nothing Mermaid or HTML would read as syntax."""
    bare = label.replace("<br/>", "")
    assert not set(bare) & set('"<>|`\\\n'), label
    assert all(re.fullmatch(r"#(\d+|[a-z]+);", m) for m in re.findall(r"#[^;]*;", bare)), label


def parse_mermaid(text: str) -> tuple[dict[str, str], list[tuple[str, str, str | None, str]], dict[str, str]]:
    """Nodes (id -> label), edges and subgraphs of the output; asserts its structure."""
    lines = text.splitlines()
    assert lines[0] == "---" and lines[1].startswith("title: ") and lines[2] == "---"
    assert lines[3] == "flowchart TD"
    nodes: dict[str, str] = {}
    subgraphs: dict[str, str] = {}
    edges: list[tuple[str, str, str | None, str]] = []
    depth = 0
    link_styles: list[int] = []
    for raw in lines[4:]:
        line = raw.strip()
        if m := MERMAID_SUBGRAPH.match(line):
            assert m["id"] not in subgraphs and m["id"] not in nodes
            check_mermaid_label(m["label"])
            subgraphs[m["id"]] = m["label"]
            depth += 1
        elif line == "end":
            depth -= 1
            assert depth >= 0, "an `end` closes no subgraph"
        elif m := MERMAID_NODE.match(line):
            assert MERMAID_PAIRS[m["open"]] == m["close"], line
            assert m["id"] not in nodes and m["id"] not in subgraphs and m["id"] != "end"
            check_mermaid_label(m["label"])
            nodes[m["id"]] = m["label"]
        elif m := MERMAID_EDGE.match(line):
            assert m["a"] in nodes and m["b"] in nodes, f"edge before its nodes: {line}"
            if m["label"] is not None:
                check_mermaid_label(m["label"])
            edges.append((m["a"], m["b"], m["label"], m["arrow"]))
        elif line.startswith("linkStyle "):
            link_styles.extend(int(i) for i in line.split()[1].split(","))
        elif line.startswith("classDef "):
            assert re.fullmatch(r"classDef \w+ [\w:#,.-]+", line), line
        elif line.startswith("class "):
            _, members, _name = line.split(" ")
            assert set(members.split(",")) <= set(nodes), line
        else:
            raise AssertionError(f"not a Mermaid statement this renderer writes: {line!r}")
    assert depth == 0, "a subgraph is not closed"
    assert all(0 <= i < len(edges) for i in link_styles)
    return nodes, edges, subgraphs


def dot_tokens(text: str) -> list[str]:
    """The tokens of a dot file: quoted strings (escapes kept), ids, punctuation."""
    tokens = re.findall(r'"(?:[^"\\\n]|\\.)*"|->|[A-Za-z_][A-Za-z0-9_.]*|[0-9.]+|[{}\[\];=,]|\S', text)
    assert '"' not in [t for t in tokens if len(t) == 1], "an unterminated string"
    return tokens


def parse_dot(text: str) -> tuple[dict[str, str], list[tuple[str, str, dict[str, str]]], list[str]]:
    """Nodes (id -> label), edges and clusters of the output; asserts its structure."""
    lines = text.splitlines()
    assert re.fullmatch(r'digraph "(?:[^"\\]|\\.)*" \{', lines[0])
    assert lines[-1] == "}"
    depth = 0
    for token in dot_tokens(text):
        depth += {"{": 1, "}": -1}.get(token, 0)
        assert depth >= 0
    assert depth == 0, "unbalanced braces"
    nodes: dict[str, str] = {}
    edges: list[tuple[str, str, dict[str, str]]] = []
    clusters: list[str] = []
    statement = re.compile(r"^(?P<a>\w+)(?: -> (?P<b>\w+))?(?: \[(?P<attrs>.*)\])?;$")
    for raw in lines[1:-1]:
        line = raw.strip()
        if line.startswith("subgraph "):
            assert re.fullmatch(r"subgraph cluster_\w+ \{", line)
            clusters.append(line.split()[1])
            continue
        if line == "}" or re.fullmatch(r'(label|labelloc|fontname|style)=("(?:[^"\\]|\\.)*"|\w+);', line):
            continue
        if line.startswith(("node [", "edge [")):
            continue
        m = statement.match(line)
        assert m, f"not a dot statement this renderer writes: {line!r}"
        attrs = dict(re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|[\w.#]+)', m["attrs"] or ""))
        if m["b"] is None:
            assert m["a"] not in nodes
            nodes[m["a"]] = attrs.get("label", "")
        else:
            assert m["a"] in nodes and m["b"] in nodes, f"edge before its nodes: {line}"
            edges.append((m["a"], m["b"], attrs))
    return nodes, edges, clusters


def unquote_dot(value: str) -> str:
    assert value.startswith('"') and value.endswith('"')
    return re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], value[1:-1])


def unescape_mermaid(label: str) -> str:
    entities = {"quot": '"', "lt": "<", "gt": ">", "amp": "&"}
    text = label.replace("<br/>", "\n")
    return re.sub(r"#(\d+|[a-z]+);", lambda m: chr(int(m[1])) if m[1].isdigit() else entities[m[1]], text)


# ---------------------------------------------------------------- snapshots

SNAPSHOT_BUNDLED = ["coding-task", "bug-investigation", "release-checklist", "workflow-authoring"]
SNAPSHOT_CORPUS = ["simple-batch.json", "simple-polling.json"]


@pytest.mark.parametrize("fmt", ["mermaid", "dot"])
@pytest.mark.parametrize("workflow_id", SNAPSHOT_BUNDLED)
def test_bundled_graphs_match_their_snapshots(workflow_id: str, fmt: str, snapshot: Any) -> None:
    assert render(bundled(workflow_id), fmt) == snapshot  # type: ignore[arg-type]


@pytest.mark.corpus
@pytest.mark.parametrize("fmt", ["mermaid", "dot"])
@pytest.mark.parametrize("name", SNAPSHOT_CORPUS)
def test_corpus_loop_graphs_match_their_snapshots(name: str, fmt: str, snapshot: Any) -> None:
    assert render(corpus(LOOPS / name), fmt) == snapshot  # type: ignore[arg-type]


def test_the_tricky_labels_match_their_snapshot(snapshot: Any) -> None:
    workflow = compiled(TRICKY)
    assert {"mermaid": to_mermaid(workflow), "dot": to_dot(workflow)} == snapshot


def test_the_readme_graph_is_current() -> None:
    page = (BUNDLED.parent / "docs" / "graph-coding-task.md").read_text(encoding="utf-8")
    assert "```mermaid\n" + to_mermaid(bundled("coding-task")) + "```" in page


# ---------------------------------------------------------------- structure, every workflow


def every_workflow() -> list[Workflow]:
    return [bundled(p.stem) for p in bundled_files()] + [corpus(p) for p in corpus_accepted()]


WORKFLOWS = every_workflow()


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda w: w.id)
def test_mermaid_output_is_well_formed(workflow: Workflow) -> None:
    nodes, _, subgraphs = parse_mermaid(to_mermaid(workflow))
    loops = [n for n in workflow.nodes.values() if isinstance(n, Loop)]
    assert len(subgraphs) == len(loops)
    assert {"wf_start", "wf_end"} <= set(nodes)


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda w: w.id)
def test_dot_output_is_well_formed(workflow: Workflow) -> None:
    nodes, _, clusters = parse_dot(to_dot(workflow))
    assert len(clusters) == sum(isinstance(n, Loop) for n in workflow.nodes.values())
    assert {"wf_start", "wf_end"} <= set(nodes)


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda w: w.id)
def test_every_node_lies_on_a_path_from_start_to_end(workflow: Workflow) -> None:
    graph = build(workflow)
    forward: dict[str, set[str]] = defaultdict(set)
    backward: dict[str, set[str]] = defaultdict(set)
    for edge in graph.edges:
        forward[edge.source].add(edge.target)
        backward[edge.target].add(edge.source)

    def reach(start: str, links: dict[str, set[str]]) -> set[str]:
        seen, stack = {start}, [start]
        while stack:
            for nxt in links[stack.pop()] - seen:
                seen.add(nxt)
                stack.append(nxt)
        return seen

    keys = {e.source for e in graph.edges} | {e.target for e in graph.edges}
    assert reach("wf_start", forward) == keys
    assert reach("wf_end", backward) == keys
    steps = [n for n in workflow.nodes.values() if isinstance(n, Step)]
    labels = to_mermaid(workflow)
    for step in steps:
        assert mermaid_text([f"({step.id})"]) in labels


def key_of(members: list[DiagramNode | Cluster], node: Step | Loop) -> str:
    """The graph node drawn for a step (its box) or a loop (its head)."""
    for member in members:
        if isinstance(member, Cluster):
            try:
                return key_of(member.members, node)
            except LookupError:
                continue
        if isinstance(node, Step) and member.kind in ("step", "confirm") and f"({node.id})" in member.lines:
            return member.key
        if isinstance(node, Loop) and member.kind == "head" and member.lines == [node.id]:
            return member.key
    raise LookupError(node.id)


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda w: w.id)
def test_a_conditional_node_has_a_when_edge_and_an_otherwise_edge_around_it(workflow: Workflow) -> None:
    graph = build(workflow)
    for node in workflow.nodes.values():
        key = key_of(graph.root, node)
        into = [e for e in graph.edges if e.target == key and e.style == "normal"]
        if node.run_condition is None:
            assert not any("when" in (e.label or "") for e in into), node.id
            continue
        assert into, node.id
        assert all((e.label or "").endswith(f"when {node.run_condition.text}") for e in into), node.id
        (source,) = {e.source for e in into}
        assert any(e.style == "skip" and e.source == source and e.target != key for e in graph.edges), node.id


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
@pytest.mark.parametrize("workflow", [*WORKFLOWS, compiled(TRICKY)], ids=lambda w: w.id)
def test_graphviz_accepts_the_dot_output(workflow: Workflow) -> None:
    result = subprocess.run(
        ["dot", "-Tplain"], input=to_dot(workflow), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and not result.stderr, result.stderr


# ---------------------------------------------------------------- labels and parts


def test_labels_survive_both_escapings() -> None:
    workflow = compiled(TRICKY)
    nodes, edges, subgraphs = parse_mermaid(to_mermaid(workflow))
    title = unescape_mermaid(nodes["step_odd_title"])
    assert title.replace("\n", " ") == " ".join(wrap(TRICKY_TITLE)) + " (odd-title)"
    condition = next(label for _, b, label, _ in edges if b == "step_odd_condition")
    assert unescape_mermaid(condition or "") == "when name == 'a|b<c>\"d\"' and flag"
    assert unescape_mermaid(subgraphs["loop_outer"]) == "Outer <loop> · forEach group in groups · max 5"
    dot_nodes, dot_edges, _ = parse_dot(to_dot(workflow))
    assert unquote_dot(dot_nodes["step_odd_title"]).replace("\n", " ") == " ".join(wrap(TRICKY_TITLE)) + (
        " (odd-title)"
    )
    dot_condition = next(attrs["label"] for _, b, attrs in dot_edges if b == "step_odd_condition")
    assert unquote_dot(dot_condition) == "when name == 'a|b<c>\"d\"' and flag"
    # a step called `end` does not end the Mermaid subgraph
    assert "step_end" in nodes


def test_escaping_of_single_strings() -> None:
    assert mermaid_text(['a "b" <c> | `d` & #e; \\f']) == (
        "a #quot;b#quot; #lt;c#gt; #124; #96;d#96; #amp; #35;e; #92;f"
    )
    assert mermaid_text(["one", "two"]) == "one<br/>two"
    assert dot_string('a "b" \\n <c> | {d}') == '"a \\"b\\" \\\\n <c> | {d}"'


def test_wrap_keeps_line_breaks_and_drops_control_characters() -> None:
    assert wrap("a\r\nb\tc\x00d") == ["a", "b c d"]
    assert wrap("x " * 30, 10) == [
        "x x x x x",
        "x x x x x",
        "x x x x x",
        "x x x x x",
        "x x x x x",
        "x x x x x",
    ]
    assert wrap("") == [""]


def test_loop_bounds_say_kind_and_bound() -> None:
    bounds = {
        n.id: loop_bound(n)
        for w in WORKFLOWS[: len(bundled_files())]
        for n in w.nodes.values()
        if isinstance(n, Loop)
    }
    assert bounds["implement-parts"] == "forEach part in planParts"
    assert bounds["hypothesis-loop"] == "while rootCauseFound != true"
    assert bounds["stability-runs"] == "for 3"
    assert bounds["review-files"] == "for changedFiles"
    assert bounds["apply-steps"] == "until remainingSteps <= 0"


def test_confirmation_steps_are_marked() -> None:
    mermaid = to_mermaid(bundled("coding-task"))
    assert "class step_clarify,step_plan,step_verify confirm" in mermaid
    assert "requires confirmation when taskSize<br/>== 'large' or touchesPublicApi" in mermaid
    dot = to_dot(bundled("coding-task"))
    assert re.search(r"step_clarify \[label=\"[^\"]*requires confirmation\", [^]]*peripheries=2", dot)
    assert (
        "step_understand [label=" in dot
        and "peripheries" not in dot.split("step_understand [")[1].split("\n")[0]
    )


def test_a_loop_has_a_back_edge_and_a_done_edge() -> None:
    graph = build(bundled("coding-task"))
    edges = {(e.source, e.target): (e.label, e.style) for e in graph.edges}
    assert edges[("step_implement_part", "head_implement_parts")] == ("next part", "back")
    assert edges[("head_implement_parts", "step_implement_part")] == (None, "normal")
    assert edges[("head_implement_parts", "step_verify")] == ("done", "normal")
    assert edges[("step_understand", "step_clarify")] == ("when openQuestions > 0", "normal")
    assert edges[("step_understand", "step_plan")] == ("otherwise", "skip")


def test_consecutive_conditional_steps_meet_at_a_join_point() -> None:
    graph = build(bundled("release-checklist"))
    joins = [e for e in graph.edges if e.target.startswith("join_")]
    assert joins, "publish-prerelease, publish-stable and announce follow each other"
    counts: dict[str, int] = defaultdict(int)
    for edge in graph.edges:
        counts[edge.target] += 1
    assert max(counts.values()) <= 2  # no node collects an edge from every step before it


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError):
        render(bundled("coding-task"), "svg")  # type: ignore[arg-type]


# ---------------------------------------------------------------- the command


@pytest.fixture(autouse=True)
def private_places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command reads no real user, project or environment workflows."""
    for name in ("WORKFLOW_STORAGE_PATH", "HANDRAIL_WORKFLOWS", "WORKFLOW_INCLUDE_BUNDLED"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)


def test_the_command_prints_mermaid_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", "coding-task"]) == 0
    assert capsys.readouterr().out == to_mermaid(bundled("coding-task"))


def test_the_command_prints_dot(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", "refactoring", "--format", "dot"]) == 0
    assert capsys.readouterr().out == to_dot(bundled("refactoring"))


@pytest.mark.corpus
def test_the_command_reads_workflows_from_workflows(capsys: pytest.CaptureFixture[str]) -> None:
    path = LOOPS / "simple-retry.json"
    assert main(["graph", "simple-retry-example", "--no-bundled", "--workflows", str(path)]) == 0
    out = capsys.readouterr().out
    assert "for maxRetries · max 5" in out


def test_the_command_refuses_an_unknown_id_with_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", "codng-task"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no workflow `codng-task`; did you mean `coding-task`?" in captured.err
    assert main(["graph", "coding-task", "--no-bundled", "--workflows", str(LOOPS)]) == 1
    assert "no workflow `coding-task`" in capsys.readouterr().err


def test_the_command_refuses_an_unknown_format() -> None:
    assert main(["graph", "coding-task", "--format", "svg"]) == 2
