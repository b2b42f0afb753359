"""Debian's chromium, driven by Playwright (never `playwright install`: the browser is
the system's, installed by `.ci/run`). Outside CI a missing chromium skips the test
with the reason; under CI=true it fails."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_chromium() -> None:
    if os.path.exists(CHROMIUM) or shutil.which("chromium"):
        return
    reason = f"no chromium at {CHROMIUM} (apt-get install -y chromium)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


@contextmanager
def chromium() -> Iterator[Any]:
    """A launched headless browser."""
    require_chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # the test extra names it; say so rather than skip silently in CI
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("playwright is not installed (pip install -e '.[test]')")
        pytest.skip("playwright is not installed (pip install -e '.[test]')")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium"),
            args=ARGS,
            headless=True,
        )
        try:
            yield browser
        finally:
            browser.close()


DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs")


def picture(target: Any, name: str) -> str:
    """A screenshot of `target` (a page or a locator). It is written into docs/ for readers
    only when HANDRAIL_SCREENSHOTS=docs is set, so that a test run leaves the tree as it was;
    otherwise into a temporary folder, which still proves the page can be drawn."""
    folder = DOCS if os.environ.get("HANDRAIL_SCREENSHOTS") == "docs" else _scratch()
    path = os.path.join(folder, name)
    target.screenshot(path=path, scale="css", animations="disabled")
    return path


def _scratch() -> str:
    import tempfile

    folder = os.path.join(tempfile.gettempdir(), f"handrail-screenshots-{os.getpid()}")
    os.makedirs(folder, exist_ok=True)
    return folder
