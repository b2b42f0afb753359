"""How a database URL names its store: the SQLite file of a sqlite:/// URL and whether a
PostgreSQL URL is one this handrail can use. Below both `open` (which picks the store)
and the stores themselves, which read their URL back."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from handrail.model.errors import StorageError

if TYPE_CHECKING:
    from pathlib import Path


def sqlite_url(path: Path | str) -> str:
    """`sqlite:///` and the absolute path, its leading slash not doubled."""
    absolute = os.path.abspath(path) if isinstance(path, str) else str(path.absolute())
    return "sqlite:///" + absolute.lstrip("/")


def sqlite_path(url: str) -> Path:
    from pathlib import Path  # lazy: a gate hook's default file, named by no URL, needs neither
    from urllib.parse import unquote, urlparse  # lazy: as pathlib

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
    from urllib.parse import urlsplit  # lazy: only a PostgreSQL URL needs it

    shown = {"database": url.split(":", 1)[0] + "://..."}
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError as exc:
        raise StorageError(f"PostgreSQL URL is malformed: {exc}", shown) from None
    import importlib.util  # lazy: only a PostgreSQL URL needs it, and a hook's start-up does not

    if importlib.util.find_spec("psycopg") is None or importlib.util.find_spec("psycopg_pool") is None:
        raise StorageError(
            "PostgreSQL run stores need psycopg 3 and psycopg_pool: pip install 'handrail[postgres]'",
            shown,
        )
