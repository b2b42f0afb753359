"""The golden cases in spec/cases, shared by the tests and the benchmarks.

Topics: "conditions" and "rules" (one JSON file per subject in spec/cases/<topic>/),
and "compile-errors" (spec/cases/compile-errors.json).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CASES = Path(__file__).resolve().parents[2] / "spec" / "cases"


def case_files(topic: str) -> dict[str, dict[str, Any]]:
    """Every golden file of a topic, by file stem: {"description": ..., "cases": [...]}."""
    single = CASES / f"{topic}.json"
    if single.is_file():
        return {topic: _read(single)}
    folder = CASES / topic
    if not folder.is_dir():
        raise FileNotFoundError(f"no golden cases for {topic!r} in {CASES}")
    return {path.stem: _read(path) for path in sorted(folder.glob("*.json"))}


def load_cases(topic: str) -> list[dict[str, Any]]:
    """Every case of a topic, in file order; each carries the stem of its file as "file"."""
    return [
        {**case, "file": stem} for stem, content in case_files(topic).items() for case in content["cases"]
    ]


def _read(path: Path) -> dict[str, Any]:
    content: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return content
