"""`handrail gate`: the hook a harness runs at its fixed points (spec/gate.md,
handrail/gate/hook.py), and `gate install|uninstall|doctor`, which wire it into a
harness's settings (handrail/gate/install.py)."""

from __future__ import annotations

import argparse

from handrail.gate.hook import run_hook
from handrail.gate.hook_options import MANAGE, add_arguments


def add_gate(gate: argparse.ArgumentParser) -> None:
    add_arguments(gate)
    gate.add_argument("--json", action="store_true", help="doctor: the findings as JSON")
    gate.add_argument(
        "--http-hooks",
        action="store_true",
        help="install claude-code with --server: Claude Code's own HTTP hooks (no process a tool call, "
        "but Claude Code goes on when the server cannot be reached) instead of command hooks that "
        "refuse then",
    )


def gate_command(args: argparse.Namespace) -> int:
    if args.event == "doctor":
        from handrail.gate.doctor import doctor  # lazy: a hook's start-up

        found: int = doctor(args)
        return found
    if args.event in MANAGE:
        from handrail.gate.install import manage  # lazy: a hook's start-up

        code: int = manage(args)
        return code
    return run_hook(args)
