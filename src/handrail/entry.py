"""The `handrail` command's entry point. A hook event of `handrail gate` goes straight
to the hook (handrail/gate/hook.py): it runs on every tool call an agent makes, so it
loads the hook's options and nothing of the command table and the layers behind it;
every other command goes to the command table (handrail/cli)."""

from __future__ import annotations

import os
import sys
from typing import NoReturn


def main() -> int:
    argv = sys.argv[1:]
    if len(argv) >= 2 and argv[0] == "gate" and not {"-h", "--help"} & set(argv):
        from handrail.gate import hook_options  # lazy: a hook's start-up

        if argv[1] in hook_options.HOOK_EVENTS:
            import gc  # lazy: a hook's start-up

            # a hook is a short process that ends with os._exit: collecting cycles while
            # its modules load (each class a few) frees nothing it would reuse
            gc.disable()
            import argparse  # lazy: a hook's start-up

            # a width given: argparse then asks no terminal size of shutil, whose
            # compression modules a hook has no use for
            parser = argparse.ArgumentParser(
                prog="handrail gate", formatter_class=lambda prog: argparse.HelpFormatter(prog, width=100)
            )
            hook_options.add_arguments(parser)
            try:
                args = parser.parse_args(argv[1:])
            except SystemExit as exc:
                return 0 if exc.code in (0, None) else 2
            from handrail.gate import hook  # lazy: a hook's start-up

            exit_now(hook.run_hook(args))
    from handrail.cli import main as command  # lazy: a hook's start-up

    return command()


def exit_now(code: int) -> NoReturn:
    """End a hook's process as soon as it has answered: its answer is written and its
    store closed by now, and the interpreter's teardown (freeing every module it loaded)
    would add about a sixth to the hook's time."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # a harness that closed the pipe reads nothing more either way
    os._exit(code)
