"""Which store a database URL names, and where the default one lives."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from handrail.model.errors import StorageError
from handrail.settings import Settings
from handrail.store.urls import postgres_url, sqlite_path, sqlite_url

if TYPE_CHECKING:
    from handrail.store.base import RunStore


def default_url(environ: Mapping[str, str] | None = None) -> str:
    """`$HANDRAIL_DATABASE_URL`, else SQLite at `<handrail home>/handrail.db`."""
    from handrail.home import database_file  # lazy: pathlib, which a gate hook does not load

    return Settings.from_environment(environ).database_url or sqlite_url(database_file(environ))


def check_url(url: str | None = None) -> str:
    """`url` (default: `default_url()`) if this handrail can open it; else a StorageError
    saying why, without touching any database."""
    url = url or default_url()
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme == "sqlite":
        sqlite_path(url)
        return url
    if scheme in ("postgresql", "postgres"):
        postgres_url(url)
        return url
    raise StorageError(
        "unknown database URL: it must start with sqlite:/// (e.g. sqlite:///home/me/.handrail/handrail.db) "
        "or postgresql:// (e.g. postgresql://handrail@db.internal/handrail)",
        {"database": scheme or url[:40]},
    )


def open_store(url: str | None = None, *, reading: bool = False) -> RunStore:
    """The store `url` names (default: `default_url()`). `reading`: the caller only reads
    (a SQLite file at the current schema is then not checked whole before it is used)."""
    url = check_url(url)
    if not url.lower().startswith("sqlite:"):
        from handrail.store.postgres import PostgresStore  # psycopg loads only here

        return PostgresStore(url)
    from handrail.store.sqlite import SqliteStore  # lazy: a store's module loads only when it is opened

    return SqliteStore(sqlite_path(url), url=url, reading=reading)


def open_sqlite(path: str, *, reading: bool = False) -> RunStore:
    """The SQLite store in the file `path`, as `open_store` opens it for its URL, with no
    URL to parse: a gate hook's default file, opened without pathlib or urllib."""
    from handrail.store.sqlite import SqliteStore  # lazy: as in open_store

    return SqliteStore(path, url=sqlite_url(path), reading=reading)
