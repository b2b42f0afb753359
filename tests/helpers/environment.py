"""The environment a process the tests start gets: the tester's, less whatever of
handrail's the tester had set.

`CALLER` is every `HANDRAIL_*` variable as the tester's shell held it, taken when
this module is first imported (tests/conftest.py imports it before any fixture
runs). The session fixture in conftest removes them from `os.environ`; `child_env`
drops them again (by name and value, so a variable a test sets itself stays), for a
process started before that fixture or outside pytest. A child whose test set no
HANDRAIL_HOME gets one in its own folder, never the tester's home.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

PREFIX: Final = "HANDRAIL_"
# read by the test suite itself, never by the code under test
SUITE_SETTINGS: Final = frozenset({"HANDRAIL_WORKRAIL_CORPUS", "HANDRAIL_SCREENSHOTS"})
# the workflow folders a catalog reads: a child's catalog is what its test names
WORKFLOW_VARIABLES: Final = frozenset(
    {"WORKFLOW_STORAGE_PATH", "HANDRAIL_WORKFLOWS", "WORKFLOW_INCLUDE_BUNDLED", "WORKFLOW_GIT_REPOS"}
)
CALLER: Final[Mapping[str, str]] = {
    k: v for k, v in os.environ.items() if k.startswith(PREFIX) and k not in SUITE_SETTINGS
}


def from_the_caller(name: str, value: str) -> bool:
    """Whether `name=value` is the tester's own setting, not one a test made."""
    return CALLER.get(name) == value


def child_env(folder: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """`environ` (default os.environ) for a child working in `folder`: HOME is the
    folder, no workflow variables, none of the tester's HANDRAIL_*, and a HANDRAIL_HOME
    of the test's or else of the folder's own."""
    source = os.environ if environ is None else environ
    env = {
        k: v
        for k, v in source.items()
        if k not in WORKFLOW_VARIABLES and k not in SUITE_SETTINGS and not from_the_caller(k, v)
    }
    env["HOME"] = str(folder)
    env.setdefault("HANDRAIL_HOME", str(folder / ".handrail"))
    return env
