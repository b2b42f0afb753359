"""What a set of workflow files says about their sub-workflow steps together: a
`workflow` that names no workflow of the set (H214) and workflows that start each
other in a cycle (H215). One file alone cannot tell either: `handrail check` runs this
over the files it checked and the bundled workflows."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from handrail.catalog.suggest import close_matches
from handrail.compiler.source import SourceMap
from handrail.model.errors import Diagnostic
from handrail.model.workflow import Step, Workflow


def subworkflow_problems(
    checked: Sequence[tuple[str, Workflow]], known: Collection[str] = ()
) -> list[Diagnostic]:
    """`checked`: each file and its workflow; `known`: other ids a server would serve."""
    by_id: dict[str, tuple[str, Workflow]] = {w.id: (file, w) for file, w in checked}
    ids = set(by_id) | set(known)
    problems: list[Diagnostic] = []
    edges: dict[str, list[tuple[str, Step]]] = {}
    for file, workflow in checked:
        for node in workflow.nodes.values():
            if not isinstance(node, Step) or node.subworkflow is None:
                continue
            target = node.subworkflow.workflow_id
            if target in ids:
                edges.setdefault(workflow.id, []).append((target, node))
                continue
            close = close_matches(target, sorted(ids))
            hint = f"did you mean `{close[0]}`?" if close else "check it with the files it starts"
            problems.append(
                _at(
                    file,
                    "H214",
                    f"step `{node.id}` starts workflow `{target}`, which is not found",
                    node,
                    hint,
                )
            )
    problems.extend(_cycles(by_id, edges))
    return problems


def _cycles(
    by_id: Mapping[str, tuple[str, Workflow]], edges: Mapping[str, list[tuple[str, Step]]]
) -> list[Diagnostic]:
    """Each cycle once, reported at the step that closes it."""
    found: list[Diagnostic] = []
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    path: list[str] = []

    def visit(wid: str) -> None:
        state[wid] = 1
        path.append(wid)
        for target, step in edges.get(wid, ()):
            if state.get(target) == 1:
                loop = [*path[path.index(target) :], target]
                file = by_id[wid][0]
                said = " -> ".join(f"`{w}`" for w in loop)
                message = f"step `{step.id}` closes a cycle of sub-workflows: {said}"
                found.append(
                    _at(file, "H215", message, step, "a run of it would start itself again without end")
                )
            elif target not in state and target in by_id:
                visit(target)
        path.pop()
        state[wid] = 2

    for wid in sorted(by_id):
        if wid not in state:
            visit(wid)
    return found


def _at(file: str, code: str, message: str, step: Step, hint: str) -> Diagnostic:
    pointer = f"{step.pointer}/workflow"
    try:
        line, column = SourceMap(Path(file).read_text("utf-8")).locate(pointer)
    except OSError:
        line, column = 1, 1
    return Diagnostic(code, "error", message, pointer, line, column, hint, file)
