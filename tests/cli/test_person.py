"""`handrail person passkey add|list|remove`: `add` sends the person to the dashboard's
page (a passkey is made in the browser); `list` and `remove` read the store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from handrail.store import open_store
from handrail.store.passkeys import Passkey
from tests.helpers.server import clean_env

pytestmark = pytest.mark.slow  # real processes


def person(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handrail", "person", "passkey", *argv],
        capture_output=True,
        text=True,
        env=clean_env(tmp_path),
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def test_add_names_the_dashboards_passkey_page(tmp_path: Path) -> None:
    done = person(tmp_path, "add", "--url", "http://localhost:9999/")
    assert done.returncode == 0, done.stderr
    assert "http://localhost:9999/passkeys" in done.stdout


def test_list_and_remove_show_and_forget_a_persons_passkeys(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    store = open_store(url)
    try:
        store.add_passkey(
            Passkey("cred-1", "local", "pQEC", 0, "localhost", "laptop", "2026-01-01T00:00:00Z")
        )
    finally:
        store.close()
    listed = person(tmp_path, "list", "--database", url)
    assert listed.returncode == 0, listed.stderr
    assert "cred-1  laptop  for localhost" in listed.stdout and "1 passkey of local" in listed.stdout
    missing = person(tmp_path, "remove", "nope", "--database", url)
    assert missing.returncode == 1 and "local has no passkey `nope`" in missing.stderr
    removed = person(tmp_path, "remove", "cred-1", "--database", url)
    assert (
        removed.returncode == 0
        and "0 passkeys of local" in person(tmp_path, "list", "--database", url).stdout
    )


def test_list_without_a_store_says_so(tmp_path: Path) -> None:
    done = person(tmp_path, "list", "--database", f"sqlite:///{tmp_path / 'none.db'}")
    assert done.returncode == 1 and "no run database at" in done.stderr
    assert not (tmp_path / "none.db").exists()
