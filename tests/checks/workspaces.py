"""Workspaces set up from data (spec/cases/checks): files, links, git commits."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from handrail.checks import Baseline, git_baseline
from handrail.compiler import compile_text
from handrail.model import StepCheck, WorkflowOrigin

GIT = ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"]


def git(workspace: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=workspace, check=True, capture_output=True)


def write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def set_up(actions: Sequence[Mapping[str, Any]], workspace: Path, outside: Path) -> Baseline:
    """Carry out the actions in order; the baseline is taken at `{"baseline": true}`, or
    after the last action."""
    workspace.mkdir(parents=True, exist_ok=True)
    outside.mkdir(parents=True, exist_ok=True)
    baseline: Baseline | None = None
    for action in actions:
        ((kind, value),) = action.items()
        if kind == "git":
            git(workspace, "-c", "init.defaultBranch=main", "init", "-q")
        elif kind == "write":
            write(workspace, value)
        elif kind == "outside":
            write(outside, value)
        elif kind == "link":
            for name, target in value.items():
                link = workspace / name
                link.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(target.replace("{outside}", str(outside)), link)
        elif kind == "delete":
            for name in value:
                (workspace / name).unlink()
        elif kind == "stage":
            git(workspace, "add", "-A")
        elif kind == "commit":
            git(workspace, "add", "-A")
            git(workspace, "commit", "-q", "--allow-empty", "-m", value)
        elif kind == "baseline":
            baseline = git_baseline(str(workspace))
        else:
            raise ValueError(f"unknown set-up action {kind!r}")
    return baseline if baseline is not None else git_baseline(str(workspace))


def compiled_checks(
    checks: Sequence[Mapping[str, Any]], origin: WorkflowOrigin = "source"
) -> tuple[StepCheck, ...]:
    """The checks, compiled as a workflow's step carries them."""
    document = {
        "id": "workflow",
        "name": "Checks",
        "description": "A step with checks.",
        "version": "1.0.0",
        "steps": [{"id": "checked", "title": "Checked", "prompt": "Do it.", "checks": list(checks)}],
    }
    compiled = compile_text(json.dumps(document), "<case>", origin=origin)
    assert compiled.workflow is not None, [d.render() for d in compiled.errors]
    step = compiled.workflow.nodes["checked"]
    assert compiled.workflow.origin == origin
    result: tuple[StepCheck, ...] = step.checks  # type: ignore[union-attr]
    return result
