"""Shared fixtures: where the project, its spec and the WorkRail corpus are.

The corpus is not part of the repository: it is found through
`HANDRAIL_WORKRAIL_CORPUS`, else at `../shared/corpus/workrail-v0.8.6` beside the
repository. Tests that need it carry the `corpus` mark (or use the `corpus`
fixture) and skip, saying why, where it is missing; under CI (`CI` set) such a
skip is a failure, so CI cannot pass without having run them.

The PostgreSQL server the store and run tests share is started once, on first use,
and stopped at the end. Where PostgreSQL cannot be found its tests skip, saying why,
except under CI (`CI=true`), where they fail.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.helpers.environment import CALLER
from tests.postgres import Cluster, reap_orphans, unavailable

if TYPE_CHECKING:
    from tests.gate.runs import GateWorld

# Where PYTHONDONTWRITEBYTECODE is set (as on the shared machine), every xdist worker would
# rewrite the asserts of every test module and compile it again on every run, some ten
# seconds of a core each: pytest keeps what it rewrote in __pycache__ (git ignores it).
# Only this process: the programs the tests start get the variable as it is.
sys.dont_write_bytecode = False

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "spec"
BUNDLED = ROOT / "workflows"


def _find_corpus() -> tuple[Path, str | None]:
    """The corpus folder, and why it cannot be used (None when it can)."""
    named = os.environ.get("HANDRAIL_WORKRAIL_CORPUS")
    if named:
        path = Path(named).expanduser().resolve()
        return path, None if path.is_dir() else f"HANDRAIL_WORKRAIL_CORPUS={named} is not a folder"
    path = ROOT.parent / "shared" / "corpus" / "workrail-v0.8.6"
    if path.is_dir():
        return path, None
    return path, f"the WorkRail corpus is not at {path}; set HANDRAIL_WORKRAIL_CORPUS to where it is"


CORPUS, CORPUS_MISSING = _find_corpus()

# Files WorkRail's own schema rejects; every other corpus file must load and walk.
CORPUS_REJECTED = {
    "spec-examples/invalid-workflow.json",
    "spec-examples/ai-task-prompt-workflow.json",
    "workflows/examples/dashboard-template-workflow.json",
}


def corpus_files() -> list[Path]:
    if CORPUS_MISSING:
        return []
    return sorted(p for p in CORPUS.rglob("*.json") if p.name != "workflow.schema.json")


def corpus_accepted() -> list[Path]:
    return [p for p in corpus_files() if p.relative_to(CORPUS).as_posix() not in CORPUS_REJECTED]


def bundled_files() -> list[Path]:
    return sorted(BUNDLED.glob("*.json"))


def corpus_text(relative: str) -> str:
    """A corpus file's text, read at import time by a module whose tests carry the
    `corpus` mark; empty where the corpus is missing (those tests are skipped)."""
    return "" if CORPUS_MISSING else (CORPUS / relative).read_text("utf-8")


@pytest.fixture(scope="session")
def corpus() -> Path:
    if CORPUS_MISSING:
        pytest.skip(CORPUS_MISSING)
    return CORPUS


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "corpus: needs the WorkRail corpus (skipped where it is missing)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "corpus" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.corpus)
        if CORPUS_MISSING and item.get_closest_marker("corpus"):
            # first, so that it is the reason shown, not "got empty parameter set" for a
            # test parametrized over the corpus files
            item.add_marker(pytest.mark.skip(reason=CORPUS_MISSING), append=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    # under CI a corpus test that did not run is a failure, whatever skipped it
    if report.skipped and _in_ci() and item.get_closest_marker("corpus"):
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.longrepr = f"CI must run every corpus test, and this one skipped: {reason}"


@pytest.fixture(scope="session", autouse=True)
def _none_of_the_testers_settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Before any fixture of a wider scope than a test's starts a server: none of the
    tester's HANDRAIL_* (a home that `handrail init` filled, a database, a token) and
    an empty HOME. A test's own home comes from `_private_handrail_home`."""
    with pytest.MonkeyPatch.context() as patch:
        for name in CALLER:
            patch.delenv(name, raising=False)
        patch.setenv("HOME", str(tmp_path_factory.mktemp("session-home")))
        yield


@pytest.fixture(autouse=True)
def _private_handrail_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the real home: every one gets its own empty HOME (so no
    ~/.workrail of the tester's) and its own HANDRAIL_HOME, apart from it."""
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    monkeypatch.setenv("HANDRAIL_HOME", str(tmp_path_factory.mktemp("handrail-home")))
    monkeypatch.delenv("HANDRAIL_DATABASE_URL", raising=False)
    monkeypatch.delenv("HANDRAIL_RUNS_ONLY", raising=False)
    monkeypatch.delenv("HANDRAIL_SIGNING_KEY", raising=False)


def require_postgres(reason: str | None, environ: Mapping[str, str] = os.environ) -> None:
    """Skip, saying why, when PostgreSQL cannot be started here; under CI, fail."""
    if reason is None:
        return
    if environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must run the PostgreSQL tests: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    require_postgres(unavailable())
    reap_orphans()  # left by earlier runs whose maker and watchdog were both killed
    cluster = Cluster(fsync=False)  # nothing here survives the cluster: spare the disk
    yield cluster
    cluster.stop()


@pytest.fixture
def world(tmp_path: Path) -> Iterator[GateWorld]:
    """The gate's world, for the gate's, the run layer's and the dashboard's tests: a home,
    HANDRAIL_HOME, a workspace and the run store, all in the test's folder, closed after it."""
    from tests.gate.runs import GateWorld  # lazy: only the tests that ask for one load the run layer

    found = GateWorld(tmp_path)
    yield found
    found.close()


@pytest.fixture
def postgres_url(postgres_cluster: Cluster) -> str:
    """A fresh, empty database on the shared server."""
    return postgres_cluster.database()
