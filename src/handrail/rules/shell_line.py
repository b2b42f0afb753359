"""Shell command lines as the gate reads them: split into the commands they run,
each with its leading noise taken off, and globs over them (`*` for any run of
characters, spaces and `/` included; `?` for one).

This is a reading of what a line plainly says, not a shell: `sh -c`, `eval`,
scripts, aliases and interpreters hide what they run, and spec/gate.md says so.
Matching is a wildcard walk with one saved position, so its time stays within the
product of the two lengths whatever the agent writes (no regex backtracking).
"""

from __future__ import annotations

import re

MAX_LINE = 16_384  # longer lines are read up to here; the rest cannot hide a command from `*`
SEPARATORS = re.compile(r"&&|\|\||[;|&\n]|\$\(|`|\)")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=\S*\s+")
WRAPPERS = ("env", "command", "nohup", "time", "sudo", "exec", "builtin", "nice")
# git's options that come before its subcommand and take a value in the next word
GIT_VALUE_OPTIONS = ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path")


def commands(line: str) -> list[str]:
    """The commands a line runs, in order, each normalized (see `normalize`); an empty
    line gives one empty command, so that a rule over `shell` still sees it."""
    parts = [normalize(part) for part in SEPARATORS.split(line[:MAX_LINE])]
    found = [part for part in parts if part]
    return found or [""]


def normalize(command: str) -> str:
    """One command without leading `VAR=value` assignments and wrappers (`env`,
    `sudo`, ...), with git's global options (`-C dir`, `-c k=v`, `--no-pager`) taken
    out, so that `git -C . commit` reads as `git commit`; spaces collapsed."""
    words = command.split()
    text = " ".join(words)
    while True:
        stripped = ASSIGNMENT.match(text + " ")
        if stripped is not None and stripped.end() <= len(text) + 1:
            text = (text + " ")[stripped.end() :].strip()
            continue
        head, _, rest = text.partition(" ")
        if head in WRAPPERS and rest:
            text = _drop_options(rest)
            continue
        break
    words = text.split(" ")
    if words and words[0].rsplit("/", 1)[-1] == "git":
        return " ".join(["git", *_git_rest(words[1:])])
    return text


def git_options(command: str) -> list[str]:
    """The values git's `-c` options set in `command` (`core.hooksPath=/dev/null`)."""
    words = command.split()
    found: list[str] = []
    for index, word in enumerate(words[:-1]):
        if word == "-c":
            found.append(words[index + 1])
    found.extend(w[2:] for w in words if w.startswith("-c") and len(w) > 2 and "=" in w)
    return found


def _git_rest(words: list[str]) -> list[str]:
    index = 0
    while index < len(words):
        word = words[index]
        if word in GIT_VALUE_OPTIONS:
            index += 2
        elif word.startswith("-"):
            index += 1
        else:
            break
    return words[index:]


def _drop_options(text: str) -> str:
    words = text.split(" ")
    while words and words[0].startswith("-"):
        words.pop(0)
    return " ".join(words)


def glob_matches(glob: str, text: str) -> bool:
    """Whether `text` is all of `glob`: `*` any run of characters, `?` one."""
    g = t = 0
    star = -1
    mark = 0
    while t < len(text):
        if g < len(glob) and (glob[g] == "?" or glob[g] == text[t]) and glob[g] != "*":
            g += 1
            t += 1
        elif g < len(glob) and glob[g] == "*":
            star = g
            mark = t
            g += 1
        elif star >= 0:
            g = star + 1
            mark += 1
            t = mark
        else:
            return False
    while g < len(glob) and glob[g] == "*":
        g += 1
    return g == len(glob)
