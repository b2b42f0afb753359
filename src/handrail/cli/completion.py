"""`handrail completion bash|zsh|fish`: a shell completion script, generated from the
command's own parser, so that every command, verb and option it knows completes and
none it does not. Loaded only when the command runs."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Iterator

from handrail.cli.options import EXIT_OK

SHELLS = ("bash", "zsh", "fish")
Node = tuple[tuple[str, ...], argparse.ArgumentParser]  # (the words after `handrail`, its parser)


def _children(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """The (sub)commands of `parser`: name -> (parser, one-line help)."""
    found: dict[str, tuple[argparse.ArgumentParser, str]] = {}
    for action in parser._actions:  # argparse has no public walk of its tree
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, child in action.choices.items():
                found[name] = (child, helps.get(name, ""))
    return found


def _options(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    """The option strings `parser` takes, each with its help (unlisted ones included)."""
    found: list[tuple[str, str]] = []
    for action in parser._actions:
        help_text = "" if action.help in (None, argparse.SUPPRESS) else str(action.help)
        found += [(flag, help_text) for flag in action.option_strings]
    return found


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[Node]:
    yield path, parser
    for name, (child, _) in _children(parser).items():
        yield from _walk(child, (*path, name))


def add_completion(completion: argparse.ArgumentParser) -> None:
    completion.add_argument("shell", choices=SHELLS, help="the shell it is for")


def run(args: argparse.Namespace) -> int:
    from handrail.cli import build_parser  # the whole parser: every command's module, loaded now

    sys.stdout.write(script(build_parser(), args.shell))
    return EXIT_OK


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    return {"bash": _bash, "zsh": _zsh, "fish": _fish}[shell](parser)


def _bash(parser: argparse.ArgumentParser) -> str:
    nodes = list(_walk(parser))
    steps = " | ".join(shlex.quote(" " + " ".join(path)) for path, _ in nodes if path)
    cases = []
    for path, node in nodes:
        words = [*_children(node), *(flag for flag, _ in _options(node))]
        cases.append(
            f"        {shlex.quote(''.join(' ' + w for w in path))}) words={shlex.quote(' '.join(words))} ;;"
        )
    return "\n".join(
        [
            '# handrail completion for bash: eval "$(handrail completion bash)"',
            "_handrail() {",
            '    local cur="${COMP_WORDS[COMP_CWORD]}" path="" word words i',
            "    for ((i = 1; i < COMP_CWORD; i++)); do",
            '        word="${COMP_WORDS[i]}"',
            '        case "$path $word" in',
            f'            {steps}) path="$path $word" ;;',
            "        esac",
            "    done",
            '    case "$path" in',
            *cases,
            "        *) words= ;;",
            "    esac",
            '    COMPREPLY=($(compgen -W "$words" -- "$cur"))',
            "}",
            "complete -F _handrail handrail",
            "",
        ]
    )


def _zsh(parser: argparse.ArgumentParser) -> str:
    # zsh runs bash completion functions through its bashcompinit module
    return "\n".join(
        [
            '# handrail completion for zsh: eval "$(handrail completion zsh)"',
            "autoload -U +X bashcompinit && bashcompinit",
            _bash(parser).split("\n", 1)[1],
        ]
    )


def _fish(parser: argparse.ArgumentParser) -> str:
    lines = ["# handrail completion for fish: handrail completion fish | source", "complete -c handrail -f"]
    for path, node in _walk(parser):
        children = _children(node)
        # at `path`, and no word of the level below typed yet
        seen = "; and ".join(f"__fish_seen_subcommand_from {w}" for w in path) or "__fish_use_subcommand"
        below = f"; and not __fish_seen_subcommand_from {' '.join(children)}" if children else ""
        condition = shlex.quote(seen + below)
        for name, (_, help_text) in children.items():
            lines.append(
                f"complete -c handrail -n {condition} -a {shlex.quote(name)} -d {shlex.quote(help_text)}"
            )
        for flag, help_text in _options(node):
            kind = f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}"
            lines.append(f"complete -c handrail -n {condition} {kind} -d {shlex.quote(help_text[:80])}")
    return "\n".join(lines) + "\n"
