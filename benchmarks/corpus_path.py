"""Where the WorkRail corpus is, for the benchmarks as for the tests (tests/conftest.py):
`HANDRAIL_WORKRAIL_CORPUS`, else `../shared/corpus/workrail-v0.8.6` beside the repository
(a clone elsewhere, with the variable set, must find it too)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def corpus_folder() -> Path:
    named = os.environ.get("HANDRAIL_WORKRAIL_CORPUS")
    if named:
        return Path(named).expanduser().resolve()
    return ROOT.parent / "shared" / "corpus" / "workrail-v0.8.6"


CORPUS = corpus_folder()
