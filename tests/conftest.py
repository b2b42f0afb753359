"""Shared fixtures: where the project, its spec and the WorkRail corpus are."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "spec"
BUNDLED = ROOT / "workflows"
CORPUS = ROOT.parent / "shared" / "corpus" / "workrail-v0.8.6"

# Files WorkRail's own schema rejects; every other corpus file must load and walk.
CORPUS_REJECTED = {
    "spec-examples/invalid-workflow.json",
    "spec-examples/ai-task-prompt-workflow.json",
    "workflows/examples/dashboard-template-workflow.json",
}


def corpus_files() -> list[Path]:
    return sorted(p for p in CORPUS.rglob("*.json") if p.name != "workflow.schema.json")


def corpus_accepted() -> list[Path]:
    return [p for p in corpus_files() if p.relative_to(CORPUS).as_posix() not in CORPUS_REJECTED]


def bundled_files() -> list[Path]:
    return sorted(BUNDLED.glob("*.json"))


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.exists():
        pytest.fail(f"the WorkRail corpus is missing at {CORPUS}")
    return CORPUS


@pytest.fixture(autouse=True)
def _private_handrail_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test writes runs into the real ~/.handrail: every one gets its own HANDRAIL_HOME."""
    monkeypatch.setenv("HANDRAIL_HOME", str(tmp_path_factory.mktemp("handrail-home")))
    monkeypatch.delenv("HANDRAIL_DATABASE_URL", raising=False)
    monkeypatch.delenv("HANDRAIL_RUNS_ONLY", raising=False)
