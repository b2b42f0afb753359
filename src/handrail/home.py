"""Where handrail keeps its own files: `$HANDRAIL_HOME`, else `~/.handrail`.

Everything handrail reads or writes by default lives under this one folder (the
user's workflows, the default SQLite database, the git sources' checkouts), so that
setting HANDRAIL_HOME moves all of it and nothing is left behind in `~/.handrail`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from handrail.settings import Settings


def handrail_home(environ: Mapping[str, str] | None = None, *, home: Path | None = None) -> Path:
    """`$HANDRAIL_HOME` (made absolute: a database URL needs an absolute path), else
    `.handrail` in `home` (default: the user's home folder)."""
    named = Settings.from_environment(environ).home
    if named:
        return Path(named).expanduser().absolute()
    return (home or Path.home()) / ".handrail"


def workflows_folder(environ: Mapping[str, str] | None = None, *, home: Path | None = None) -> Path:
    """The user's own workflows, which every server reads and `handrail init` creates."""
    return handrail_home(environ, home=home) / "workflows"


def database_file(environ: Mapping[str, str] | None = None) -> Path:
    """The default SQLite run store."""
    return handrail_home(environ) / "handrail.db"


def git_checkouts(environ: Mapping[str, str] | None = None) -> Path:
    """Where the git sources are fetched to, one folder per repository and ref."""
    return handrail_home(environ) / "git"
