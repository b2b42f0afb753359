"""What the server lets checks do, set once by the person who starts it.

Built from `--allow-commands`, `--command NAME=COMMAND` (repeatable) and the
environment (`HANDRAIL_ALLOW_COMMANDS=1`, `HANDRAIL_COMMANDS`); never from
anything a client sends.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from handrail.model.slotted import Frozen
from handrail.settings import Settings

COMMAND_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")


class CheckConfig(Frozen):
    """(A Frozen value, not a dataclass: a server reads it before its first answer.)"""

    __slots__ = (
        "allow_commands",
        "commands",
        "default_timeout_seconds",
        "git_timeout_seconds",
        "max_entries",
        "max_read_bytes",
        "max_timeout_seconds",
        "output_tail_bytes",
    )

    allow_commands: bool
    commands: Mapping[str, tuple[str, ...]]
    default_timeout_seconds: float
    max_timeout_seconds: float
    git_timeout_seconds: float
    output_tail_bytes: int
    max_read_bytes: int
    max_entries: int

    def __init__(
        self,
        allow_commands: bool = False,  # command checks run only when the user said so
        commands: Mapping[str, tuple[str, ...]] = MappingProxyType({}),  # name -> argv (copied)
        default_timeout_seconds: float = 600.0,  # a command check that gives none
        max_timeout_seconds: float = 3600.0,  # no check's timeoutSeconds goes past this
        git_timeout_seconds: float = 30.0,  # each `git` call of a git check
        output_tail_bytes: int = 4096,  # the end of a command's output that is kept
        max_read_bytes: int = 1_000_000,  # read of each file a `contains` searches
        max_entries: int = 20_000,  # files and folders a file check looks at
    ) -> None:
        self._fill({**locals(), "commands": MappingProxyType(dict(commands))})

    @property
    def commands_configured(self) -> bool:
        return bool(self.commands)


def parse_command(text: str) -> tuple[str, tuple[str, ...]]:
    """`NAME=COMMAND LINE` -> (name, argv); the command line is split as a shell would
    split words (shlex), but no shell ever runs it. ValueError says what is wrong."""
    name, sep, line = text.partition("=")
    name = name.strip()
    if not sep:
        raise ValueError(f'{text!r} is not NAME=COMMAND (for example test="pytest -q")')
    if not COMMAND_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a command name: a letter, then letters, digits, `_`, `.` or `-`")
    import shlex  # here: a server reads its configuration before anything else loads

    try:
        argv = tuple(shlex.split(line))
    except ValueError as exc:
        raise ValueError(f"command `{name}`: {exc}") from None
    if not argv:
        raise ValueError(f"command `{name}` is empty")
    return name, argv


def parse_commands_variable(text: str) -> dict[str, tuple[str, ...]]:
    """HANDRAIL_COMMANDS: the same NAME=COMMAND words as --command, separated by spaces
    and quoted as in a shell: `test="pytest -q" lint="ruff check ."`."""
    import shlex  # lazy: only a command given as one line is split

    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"HANDRAIL_COMMANDS: {exc}") from None
    out: dict[str, tuple[str, ...]] = {}
    for word in words:
        try:
            name, argv = parse_command(word)
        except ValueError as exc:
            raise ValueError(f"HANDRAIL_COMMANDS: {exc}") from None
        out[name] = argv
    return out


def check_config(
    *,
    allow_commands: bool = False,
    commands: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> CheckConfig:
    """The configuration from the command line and the environment: a flag or variable
    allows commands; `--command` entries override HANDRAIL_COMMANDS entries of the same
    name. ValueError names a bad entry."""
    given = Settings.from_environment(environ if environ is not None else {})
    allowed = allow_commands or given.allow_commands
    named = parse_commands_variable(given.commands)
    for entry in commands:
        name, argv = parse_command(entry)
        named[name] = argv
    return CheckConfig(allow_commands=allowed, commands=named)
