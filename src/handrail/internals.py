"""The private interfaces of other code that handrail relies on, in one place.

- Python's own regex parser, `re._parser` and `re._constants` (Python 3.11 to 3.13):
  handrail.patterns reads a pattern's parse tree to translate it for the linear-time
  engines. A tree is `parse(pattern, flags).data`, a list of (opcode, argument)
  pairs whose opcodes are the constants named in `SRE_NAMES`.
- fastjsonschema's generated validators (2.22 to 2.x): a compiled validator is a
  function whose globals hold `REGEX_PATTERNS` (compiled `re` patterns by their
  source; a format's pattern under `<format>_re_pattern`, called with `.match`,
  the others with `.search`) and its `validate...` functions, which call each other
  by name (`$ref`). rules/closures.py swaps the patterns and wraps those functions.
- argparse's tree of parsers (Python 3.11 to 3.13): a parser's actions are
  `parser._actions`; its subcommands are the `argparse._SubParsersAction` among them,
  whose `choices` map each name to its parser and whose `_choices_actions` carry their
  help; a `HelpFormatter` lines help up at `_action_max_length`, indented by
  `_current_indent`, which `WideSubcommandHelp`, a part of the command line's formatter,
  widens through its own fields; it writes to the width `_width`, its help column at most
  `_max_help_position`, which `WidthWhenWritten` sets when help is written. The command
  line (cli/) reads its own tree through these, for each command's --help, the
  subcommand a command line chose, and the shell completion, and makes its subcommands
  with `described_subcommands()`, a subclass of `argparse._SubParsersAction`.
- CPython's own SHA-256, `_sha256` (Python 3.11) or `_sha2` (3.12 and later), which
  hashlib falls back to without OpenSSL: `sha256` below. The same digests as
  `hashlib.sha256`, without loading libcrypto (about 5 ms), which a gate hook, hashing
  a run row's few short fields on every tool call, would otherwise spend each time.
- CPython's `_thread`, the C module under `threading`: its lock and its thread-local
  data, which are `threading.Lock` and `threading.local` themselves (`Lock` and
  `local` below). The stores take them from here, so that a gate hook, which starts no
  thread, does not load `threading` (about 4M instructions of its start).
- watchfiles' notifier, `watchfiles._rust_notify.RustNotify` (1.x): catalog/watch.py
  waits on it directly, as `watchfiles.watch` does less its filtering.

`check()` says, naming the versions, which of these is not as expected; the contract
tests (tests/test_internals.py) run it, so an upgrade that changes one fails loudly
there instead of quietly mistranslating patterns.
"""

from __future__ import annotations

import _thread
import contextlib
import importlib
import sys
from collections.abc import Callable, Iterator, MutableMapping
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    _HelpFormatter = argparse.HelpFormatter
else:
    _HelpFormatter = object  # argparse is not loaded for the mixin: the hook's start-up

sre_parse: Any = importlib.import_module("re._parser")  # no stubs: private
sre_constants: Any = importlib.import_module("re._constants")


def _own_sha256() -> Callable[..., Any]:
    for name in ("_sha256", "_sha2"):
        with contextlib.suppress(ImportError):
            found: Callable[..., Any] = importlib.import_module(name).sha256
            return found
    import hashlib  # lazy: only a Python built without its own SHA-256 needs OpenSSL's

    return hashlib.sha256


sha256 = _own_sha256()
Lock = _thread.allocate_lock  # threading.Lock
local = _thread._local  # threading.local

SRE_NAMES = (
    "ANY",
    "ASSERT",
    "ASSERT_NOT",
    "AT",
    "ATOMIC_GROUP",
    "AT_BEGINNING",
    "AT_BEGINNING_STRING",
    "AT_BOUNDARY",
    "AT_END",
    "AT_END_STRING",
    "AT_NON_BOUNDARY",
    "BRANCH",
    "CATEGORY",
    "CATEGORY_DIGIT",
    "CATEGORY_NOT_DIGIT",
    "CATEGORY_NOT_SPACE",
    "CATEGORY_NOT_WORD",
    "CATEGORY_SPACE",
    "CATEGORY_WORD",
    "GROUPREF",
    "GROUPREF_EXISTS",
    "IN",
    "LITERAL",
    "MAXREPEAT",
    "MAX_REPEAT",
    "MIN_REPEAT",
    "NEGATE",
    "NOT_LITERAL",
    "POSSESSIVE_REPEAT",
    "RANGE",
    "SUBPATTERN",
)

FORMAT_PATTERN_SUFFIX = "_re_pattern"  # REGEX_PATTERNS' key of a format's pattern


class InternalsChanged(RuntimeError):
    """A private interface handrail relies on is not as it was written against."""


def validator_globals(compiled: Callable[..., Any]) -> dict[str, Any]:
    """The globals of a validator fastjsonschema compiled: its patterns and functions."""
    names = getattr(compiled, "__globals__", None)
    if not isinstance(names, dict) or not isinstance(names.get("REGEX_PATTERNS"), dict):
        raise InternalsChanged(
            f"fastjsonschema {_version('fastjsonschema')}: a compiled validator no longer keeps "
            "REGEX_PATTERNS in its globals (handrail is written against 2.22 to 2.x)"
        )
    return names


def regex_patterns(names: dict[str, Any]) -> MutableMapping[str, Any]:
    patterns: MutableMapping[str, Any] = names["REGEX_PATTERNS"]
    return patterns


def is_format_pattern(name: str) -> bool:
    """Whether REGEX_PATTERNS' entry `name` is a format's (called with `.match`)."""
    return name.endswith(FORMAT_PATTERN_SUFFIX)


def parser_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """Every action of a parser, its options and its subcommands, hidden ones too."""
    actions: list[argparse.Action] = parser._actions
    return actions


def is_subcommands(action: argparse.Action) -> bool:
    """Whether an action is a parser's subcommands (what `add_subparsers` returns)."""
    # argparse is loaded already wherever there is an action: the command line only
    import argparse

    return isinstance(action, argparse._SubParsersAction)


def subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, argparse.ArgumentParser, str]]:
    """A parser's subcommands: the namespace field the chosen one is stored in, then
    each name with its parser and its one-line help ("" without one)."""
    for action in parser_actions(parser):
        if is_subcommands(action):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}  # type: ignore[attr-defined]
            choices: dict[str, argparse.ArgumentParser] = action.choices or {}  # type: ignore[assignment]
            for name, child in choices.items():
                yield action.dest, name, child, helps.get(name, "")


class WideSubcommandHelp(_HelpFormatter):
    """A `HelpFormatter` part (named before argparse's class among a formatter's bases)
    that lines help up past a subcommands action's longest name: argparse measures the
    names one indent short, so the longest lost its line."""

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if is_subcommands(action):
            longest = max(map(len, action.choices or ()), default=0)
            self._action_max_length = max(self._action_max_length, longest + self._current_indent + 2)


class WidthWhenWritten(_HelpFormatter):
    """A `HelpFormatter` part (named before argparse's class among a formatter's bases)
    that asks the terminal's width only when help is written: argparse makes a formatter
    for every `add_argument` too, to try its metavar, and the width it asks there loaded
    shutil (with bz2 and lzma, about 3 ms) before `handrail start` answered. The width
    and help column are then argparse's own, from a formatter it makes as it would."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24) -> None:
        # a width is given, so none is asked; only text written reads it, and none is yet
        super().__init__(prog, indent_increment, max_help_position, width=80)
        self._asked_position = max_help_position

    def format_help(self) -> str:
        # argparse is loaded already wherever help is written: the command line only
        import argparse

        measured = argparse.HelpFormatter(self._prog, self._indent_increment, self._asked_position)
        self._width, self._max_help_position = measured._width, measured._max_help_position
        written: str = super().format_help()
        return written


@cache
def described_subcommands() -> type[argparse.Action]:
    """The action class of a parser's subcommands (`add_subparsers(action=...)`) whose
    each command's parser opens its --help with the command's help line, made a
    sentence, unless it is given a description of its own."""
    # argparse is loaded already wherever a parser is made: the command line only
    import argparse

    class DescribedSubcommands(argparse._SubParsersAction):  # type: ignore[type-arg]
        def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
            said = kwargs.get("help")
            if kwargs.get("description") is None and said:
                kwargs["description"] = said[0].upper() + said[1:] + "."
            made: argparse.ArgumentParser = super().add_parser(name, **kwargs)
            return made

    return DescribedSubcommands


def rust_notify() -> Any:
    """watchfiles' notifier class, `RustNotify`, which its public `watch` wraps."""
    # watchfiles loads its Rust extension: only when a catalog is watched
    from watchfiles._rust_notify import RustNotify

    return RustNotify


def check() -> list[str]:
    """What is not as expected, each naming the version found; empty when all is."""
    python = "Python " + sys.version.split()[0]
    problems = [
        f"{python}: re._constants has no {name} (handrail is written against Python 3.11 to 3.13)"
        for name in SRE_NAMES
        if not hasattr(sre_constants, name)
    ]
    try:
        items = list(sre_parse.parse("a", 0).data)
        if items != [(sre_constants.LITERAL, ord("a"))]:
            problems.append(f"{python}: re._parser.parse('a').data is {items!r}, not [(LITERAL, 97)]")
    except Exception as exc:  # any failure here is the change to report
        problems.append(f"{python}: re._parser.parse no longer reads a pattern ({exc!r})")
    try:
        import fastjsonschema  # lazy: read only when the internals are checked

        compiled = fastjsonschema.compile({"type": "string", "format": "date", "pattern": "^x"})
        patterns = regex_patterns(validator_globals(compiled))
        if set(patterns) != {"^x", "date" + FORMAT_PATTERN_SUFFIX}:
            problems.append(
                f"fastjsonschema {_version('fastjsonschema')}: REGEX_PATTERNS keys are {sorted(patterns)}, "
                f"not the pattern and `date{FORMAT_PATTERN_SUFFIX}`"
            )
    except InternalsChanged as exc:
        problems.append(str(exc))
    import hashlib  # lazy: read only when the internals are checked
    import threading  # lazy: read only when the internals are checked

    if threading.Lock is not Lock or threading.local is not local:
        problems.append(f"{python}: threading's Lock and local are no longer _thread's")

    if sha256(b"abc").hexdigest() != hashlib.sha256(b"abc").hexdigest():
        problems.append(f"{python}: its own SHA-256 ({sha256.__module__}) differs from hashlib's")
    problems += _argparse_problems(python)
    try:
        rust_notify()
    except ImportError as exc:
        problems.append(f"watchfiles {_version('watchfiles')}: no watchfiles._rust_notify.RustNotify ({exc})")
    return problems


def _argparse_problems(python: str) -> list[str]:
    import argparse  # lazy: read only when the internals are checked

    class Formatter(WideSubcommandHelp, WidthWhenWritten, argparse.HelpFormatter):
        pass

    parser = argparse.ArgumentParser(prog="p", formatter_class=Formatter)
    parser.add_subparsers(dest="command", action=described_subcommands()).add_parser("sub", help="a sub")
    try:
        found = [(dest, name, help_) for dest, name, _, help_ in subcommands(parser)]
        parser.format_help()  # the formatter's widening and its width read and set its fields
    except (AttributeError, TypeError) as exc:
        return [f"{python}: argparse's parser tree is not as written against ({exc!r})"]
    if found != [("command", "sub", "a sub")]:
        return [f"{python}: argparse's subcommands read as {found!r}, not [('command', 'sub', 'a sub')]"]
    return []


def _version(package: str) -> str:
    from importlib.metadata import version  # lazy: read only when the internals are checked

    return version(package)
