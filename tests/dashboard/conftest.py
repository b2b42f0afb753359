from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.browser import chromium
from tests.helpers.http import HttpServer
from tests.runs.workflows import build_feature, write


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[HttpServer, Path]]:
    """A dashboard's server of the feature workflow, and the SQLite file of its runs."""
    write(tmp_path / "flows", build_feature())
    database = tmp_path / "runs.db"
    args = ("--no-bundled", "--workflows", str(tmp_path / "flows"), "--database", f"sqlite:///{database}")
    with HttpServer(*args) as http:
        yield http, database


@pytest.fixture
def server(served: tuple[HttpServer, Path]) -> HttpServer:
    return served[0]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))  # a script that threw
    # a resource that failed, or a script refused by the Content-Security-Policy
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.errors = errors
    try:
        yield page
    finally:
        context.close()
