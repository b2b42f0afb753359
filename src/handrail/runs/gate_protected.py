"""What the gate protects while a run is active, whatever the current step allows: the
commands only a person may run and the harnesses' own settings and hooks (spec/gate.md
lists them), and whether an action touches them."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from handrail.rules.shell_line import commands, git_options, glob_matches
from handrail.runs.gate import absolute, inside, relative

if TYPE_CHECKING:
    from handrail.runs.gate import Action, Protected

# what an agent may never run while a run is active, whatever the step allows
PROTECTED_COMMANDS = (
    ("handrail runs approve*", "only a person approves or declines a run"),
    ("handrail runs decline*", "only a person approves or declines a run"),
    ("handrail runs migrate*", "only a person moves a run to another version of its workflow"),
    ("* --no-verify*", "the git hooks hold the run's rules; they may not be skipped"),
    ("git commit -n*", "the git hooks hold the run's rules; they may not be skipped"),
    ("git config *hookspath*", "the git hooks hold the run's rules; they may not be moved"),
    ("*handrail gate uninstall*", "the gate's hooks must stay installed while a run is active"),
    ("*handrail gate install*", "the gate's hooks stay as they are while a run is active"),
    ("*disableAllHooks*", "the gate's hooks must stay installed while a run is active"),
    ("curl *approv*", "only a person approves or declines a run"),
    ("wget *approv*", "only a person approves or declines a run"),
)
# files of the harnesses' own settings and hooks, relative to the workspace or the home folder
HARNESS_FILES = (
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude-plugin/**",
    ".claude/plugins/**",
    ".cursor/hooks.json",
    ".gemini/settings.json",
    ".gemini/extensions/**",
    ".codex/hooks.json",
    ".codex/config.toml",
    ".github/hooks/**",
    ".windsurf/hooks.json",
    ".git/hooks/**",
    ".git/config",
)


def protection(action: Action, cwd: str, workspace: str, protected: Protected) -> str | None:
    """Why the action touches what no step may let an agent touch, or None."""
    if action.kind == "edit":
        path = absolute(action.target, cwd)
        # a link in the workspace may lead into a protected folder: the file it reaches counts
        return _protected_path(path, workspace, protected) or _protected_path(
            os.path.realpath(path), workspace, protected
        )
    if action.kind != "shell":
        return None
    for command in commands(action.target):
        # git's config keys are read in any case: `core.hookspath` is core.hooksPath
        folded = command.lower() if command.lower().startswith("git") else command
        for pattern, why in PROTECTED_COMMANDS:
            if glob_matches(pattern, command) or glob_matches(pattern.lower(), folded):
                return why
        if any("hookspath" in option.lower() for option in git_options(action.target)):
            return "the git hooks hold the run's rules; they may not be moved"
    line = _squeezed(action.target)
    for path in protected.paths:
        if path and path in line:
            return f"the command names {path}, which holds the runs and their workflows"
    for name in HARNESS_FILES:
        plain = name.removesuffix("/**")
        if plain in line:
            return f"the command names {plain}, which holds the gate's hooks"
    return None


def _squeezed(line: str) -> str:
    """A command line with `//` and `/./` read as `/`, as paths are (a quick first
    answer: what a command changes is checked after it runs)."""
    while "//" in line or "/./" in line:
        line = line.replace("//", "/").replace("/./", "/")
    return line


def _protected_path(path: str, workspace: str, protected: Protected) -> str | None:
    for folder in protected.paths:
        if folder and (inside(path, folder) or path.startswith(folder + "-")):
            return f"{path} holds the runs and their workflows"
    for base in (workspace, protected.home):
        rel = relative(path, base)
        if rel == path:
            continue
        for name in HARNESS_FILES:
            plain = name.removesuffix("/**")
            if rel == plain or (name.endswith("/**") and rel.startswith(plain + "/")):
                return f"{rel} holds the gate's hooks"
    return None
