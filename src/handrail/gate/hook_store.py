"""Where a hook finds the run store and handrail's home, as the settings say, without
loading pathlib or urllib for the default SQLite file; the store opened as a reader; and
the paths no agent may touch while a run is active.
"""

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from handrail.store.base import RunStore


class Place:
    """Where the run store and handrail's files are, as the settings say.
    Slotted, not a NamedTuple: every hook process makes this class, at a tenth of the cost."""

    __slots__ = (
        "home",
        "sqlite_file",
        "url",
        "workflows",
    )

    def __init__(self, url: str, sqlite_file: str | None, home: str, workflows: tuple[str, ...]) -> None:
        self.url = url  # the database URL given, or "" for the default SQLite file
        self.sqlite_file = sqlite_file  # the SQLite file, when the store is one
        self.home = home  # handrail's home folder
        self.workflows = workflows  # the workflow sources the environment names


def locate(database: str | None) -> Place:
    """As home.py and store/open.py find them, without loading pathlib or urllib: the
    default SQLite file needs neither."""
    from handrail.settings import Settings  # lazy: a hook's start-up

    settings = Settings.from_environment()
    home = (
        os.path.abspath(os.path.expanduser(settings.home))
        if settings.home
        else os.path.join(os.path.expanduser("~"), ".handrail")
    )
    url = database or settings.database_url
    sqlite_file: str | None = os.path.join(home, "handrail.db") if not url else None
    if url.lower().startswith("sqlite:"):
        import contextlib  # lazy: a hook's start-up

        from handrail.store.urls import sqlite_path  # lazy: only a URL given names the file

        with contextlib.suppress(Exception):  # a URL that names no file: open_store says so
            sqlite_file = str(sqlite_path(url))
    return Place(url, sqlite_file, home, tuple(path for _, path in settings.workflow_paths))


def open_store(database: str | None, place: Place | None = None) -> "RunStore | None":
    """The run store, or None when its SQLite file does not exist (no run was ever
    started there, and the gate creates no database). The one store: it upgrades an
    older schema and refuses a newer one, naming it. Opened as a reader: a hook appends
    one event at most, and SQLite refuses any damaged page it touches, so the whole
    file is not checked first on every tool call."""
    place = place or locate(database)
    if place.sqlite_file is not None and not os.path.exists(place.sqlite_file):
        return None
    from handrail.store import open as opening  # lazy: a hook's start-up

    if place.url:
        return opening.open_store(place.url, reading=True)
    assert place.sqlite_file is not None
    return opening.open_sqlite(place.sqlite_file, reading=True)


def protected_paths(database: str | None, more: tuple[str, ...] = ()) -> Any:
    """What no agent may touch while a run is active: the run store (`database`, else
    the default one), handrail's home, the workflow sources of the environment and `more`."""
    return protected_at(locate(database), more)


def protected_at(place: Place, more: tuple[str, ...] = ()) -> Any:
    from handrail.runs.gate import Protected  # lazy: a hook's start-up

    paths = [place.home, *place.workflows, *more]
    if place.sqlite_file is not None:
        paths.append(place.sqlite_file)
    found = {os.path.abspath(os.path.expanduser(p)) for p in paths}
    found |= {os.path.realpath(p) for p in found}
    return Protected(tuple(sorted(found)), os.path.expanduser("~"))
