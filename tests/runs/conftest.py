"""The PostgreSQL server the run tests share: started once, on first use, stopped at
the end. Where PostgreSQL cannot be found its tests skip, saying why, except under CI
(`CI=true`), where they fail."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

import pytest

from tests.postgres import Cluster, reap_orphans, unavailable


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
def postgres_url(postgres_cluster: Cluster) -> str:
    """A fresh, empty database on the shared server."""
    return postgres_cluster.database()
