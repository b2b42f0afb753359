"""Where a benchmark's figures go: `NAME.json` (the numbers) and `NAME.md` (the report)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def save(folder: Path, name: str, results: dict[str, Any], text: str) -> None:
    """Write both files, then show the report."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")
    (folder / f"{name}.md").write_text(text)
    print(text, end="" if text.endswith("\n") else "\n")
