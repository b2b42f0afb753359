"""Where workflow files come from: the sources in precedence order, and the files of each.

Sources, in increasing precedence: the bundled set, the user folders, the project
folder, the environment's paths, then every --workflows path. A later source's
workflow replaces an earlier one with the same id.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from handrail._resources import resource
from handrail.catalog import folders
from handrail.home import workflows_folder
from handrail.model.errors import Diagnostic
from handrail.model.slotted import Frozen
from handrail.settings import Settings

if TYPE_CHECKING:
    from handrail.catalog.git_sources import GitSource


class Source(Frozen):
    """(A Frozen value, not a dataclass: a server lists its sources before its first answer.)"""

    __slots__ = ("git", "name", "path")
    _uncompared = frozenset({"git"})

    name: str
    path: Path
    git: GitSource | None

    def __init__(
        self,
        name: str,  # bundled | user | project | env | cli
        path: Path,
        git: GitSource | None = None,  # a git repository's checkout
    ) -> None:
        self._fill(locals())


def default_sources(
    extra: Iterable[str | Path] = (),
    *,
    bundled: bool | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
    git_refresh: float | None = None,
) -> list[Source]:
    """Raises git_sources.GitSpecError for a `git+` source it cannot understand."""
    env = os.environ if environ is None else environ
    given = Settings.from_environment(env)
    if bundled is None:
        bundled = given.include_bundled
    cwd = cwd or Path.cwd()
    sources: list[Source] = []
    if bundled:
        sources.append(Source("bundled", resource("workflows")))
    sources.append(Source("user", (home or Path.home()) / ".workrail" / "workflows"))
    sources.append(Source("user", workflows_folder(env, home=home)))
    sources.append(Source("project", cwd / "workflows"))
    for variable, path in given.workflow_paths:
        sources.append(Source(f"env:{variable}", Path(path).expanduser()))
    items = list(extra)
    if given.git_repos or any(isinstance(item, str) and item.startswith("git+") for item in items):
        sources += _with_git(items, given.git_repos, env, git_refresh)
    else:
        sources += [Source("cli", Path(item).expanduser()) for item in items]
    unique: list[Source] = []
    seen: set[Path] = set()
    for source in reversed(sources):  # the same folder twice counts once, at its highest place
        key = _resolved(source.path)
        if key not in seen:
            seen.add(key)
            unique.append(source)
    return list(reversed(unique))


def _with_git(
    extra: Iterable[str | Path], repos: Iterable[str], env: Mapping[str, str], refresh: float | None
) -> list[Source]:
    """The sources of the environment's git repositories, then of every --workflows item."""
    # here, not at import time, and only when a source is `git+` (git_sources.is_git):
    # git sources load the process driver (subprocess), which folders alone never need
    from handrail.catalog.git_sources import ENV_VARIABLE, GitSource, is_git

    def of_git(name: str, text: str) -> Source:
        git = GitSource.of(text, env, refresh=refresh)
        return Source(name, git.path, git)

    found = [of_git(f"env:{ENV_VARIABLE}", spec) for spec in repos]
    for item in extra:
        found.append(of_git("cli", str(item)) if is_git(item) else Source("cli", Path(item).expanduser()))
    return found


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path.absolute()


def discover(source: Source) -> tuple[list[Path], list[Diagnostic]]:
    """The *.json files of a source (recursively), refusing links that leave it and
    anything that is not a regular file (see handrail.catalog.folders)."""
    if source.git is not None:  # fetched on first look; a failed fetch is a warning
        problems = source.git.problems()
        if (escape := source.git.escape()) is not None:
            return [], [*problems, escape]
        if not source.path.is_dir():
            return [], problems
        files, refused = folders.discover(source.path)
        return files, problems + refused
    root = source.path
    if not root.exists() and not root.is_symlink():
        if source.name == "cli" or source.name.startswith("env:"):  # named on purpose: say so
            named = "--workflows" if source.name == "cli" else source.name.removeprefix("env:")
            return [], [
                Diagnostic(
                    "H002",
                    "warning",
                    f"no such file or folder: {root}",
                    "",
                    1,
                    1,
                    f"check the path given to {named}",
                    str(root),
                )
            ]
        return [], []  # the default places need not exist
    return folders.discover(root)
