"""Which store a database URL names, and where the default one lives."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from handrail.errors import StorageError
from handrail.home import database_file
from handrail.settings import Settings

if TYPE_CHECKING:
    from handrail.store.base import RunStore


def default_url(environ: Mapping[str, str] | None = None) -> str:
    """`$HANDRAIL_DATABASE_URL`, else SQLite at `<handrail home>/handrail.db`."""
    return Settings.from_environment(environ).database_url or sqlite_url(database_file(environ))


def sqlite_url(path: Path) -> str:
    """`sqlite:///` and the absolute path, its leading slash not doubled."""
    return "sqlite:///" + str(path.absolute()).lstrip("/")


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
    if path.startswith("//"):  # sqlite:////abs/path, the SQLAlchemy spelling: one slash is enough
        path = "/" + path.lstrip("/")
    return Path(path)


def postgres_url(url: str) -> None:
    """A StorageError unless `url` is a PostgreSQL URL this handrail can use; never
    repeats the URL's password."""
    from urllib.parse import urlsplit

    shown = {"database": url.split(":", 1)[0] + "://..."}
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError as exc:
        raise StorageError(f"PostgreSQL URL is malformed: {exc}", shown) from None
    import importlib.util

    if importlib.util.find_spec("psycopg") is None or importlib.util.find_spec("psycopg_pool") is None:
        raise StorageError(
            "PostgreSQL run stores need psycopg 3 and psycopg_pool: pip install 'handrail[postgres]'",
            shown,
        )


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


def open_store(url: str | None = None) -> RunStore:
    """The store `url` names (default: `default_url()`)."""
    url = check_url(url)
    if not url.lower().startswith("sqlite:"):
        from handrail.store.postgres import PostgresStore  # psycopg loads only here

        return PostgresStore(url)
    from handrail.store.sqlite import SqliteStore

    return SqliteStore(sqlite_path(url), url=url)
