"""Which store a database URL names, and where the default one lives."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from handrail.errors import StorageError

if TYPE_CHECKING:
    from handrail.store.base import RunStore


def handrail_home(environ: Mapping[str, str] | None = None) -> Path:
    """`~/.handrail`, or `$HANDRAIL_HOME`."""
    env = os.environ if environ is None else environ
    home = env.get("HANDRAIL_HOME")
    return Path(home).expanduser() if home else Path.home() / ".handrail"


def default_url(environ: Mapping[str, str] | None = None) -> str:
    """`$HANDRAIL_DATABASE_URL`, else SQLite at `<handrail home>/handrail.db`."""
    env = os.environ if environ is None else environ
    return env.get("HANDRAIL_DATABASE_URL") or f"sqlite:///{handrail_home(env) / 'handrail.db'}"


def sqlite_path(url: str) -> Path:
    parsed = urlparse(url)
    if parsed.netloc not in ("", "localhost"):
        raise StorageError(
            f"sqlite URL {url!r} names a host; write sqlite:///absolute/path.db",
            {"database": url},
        )
    path = unquote(parsed.path)
    if not path:
        raise StorageError(f"sqlite URL {url!r} names no file", {"database": url})
    return Path(path)


def check_url(url: str | None = None) -> str:
    """`url` (default: `default_url()`) if this handrail can open it; else a StorageError
    saying why, without touching any database."""
    url = url or default_url()
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme == "sqlite":
        sqlite_path(url)
        return url
    if scheme in ("postgresql", "postgres"):
        # issue 17: a psycopg 3 store behind the same RunStore interface
        raise StorageError(
            "PostgreSQL run stores are not supported yet; use sqlite:///path/to/handrail.db",
            {"database": scheme + "://..."},  # never echo credentials
        )
    raise StorageError(
        "unknown database URL: it must start with sqlite:/// (e.g. sqlite:///home/me/.handrail/handrail.db)",
        {"database": scheme or url[:40]},
    )


def open_store(url: str | None = None) -> RunStore:
    """The store `url` names (default: `default_url()`)."""
    url = check_url(url)
    from handrail.store.sqlite import SqliteStore

    return SqliteStore(sqlite_path(url), url=url)
