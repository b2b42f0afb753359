"""A scripted agent walks every corpus workflow WorkRail accepts, to completion."""

from __future__ import annotations

from pathlib import Path

import pytest

from handrail.compiler import compile_path
from tests.conftest import CORPUS, corpus_accepted
from tests.helpers.walker import engine_call, walk

# served or walked workflows come from the WorkRail corpus
pytestmark = [pytest.mark.corpus, pytest.mark.slow]


@pytest.mark.parametrize("path", corpus_accepted(), ids=lambda p: p.relative_to(CORPUS).as_posix())
def test_every_accepted_corpus_workflow_walks_to_completion(path: Path) -> None:
    workflow = compile_path(path).workflow
    assert workflow is not None
    record = walk(engine_call(workflow), workflow)
    assert record.results[-1]["isComplete"] is True
    assert record.steps, "a walk offers at least one step"
    assert set(record.steps) <= set(workflow.nodes)
