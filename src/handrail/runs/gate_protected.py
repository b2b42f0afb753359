"""What the gate protects while a run is active, whatever the current step allows: the
commands only a person may run, and the harnesses' own settings and hooks
(runs/gate.py judges by them; spec/gate.md lists them)."""

from __future__ import annotations

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
