"""The harness adapters of the gate (spec/gate.md): one module per harness, each
turning that harness's documented hook input into a `runs.gate.GateEvent` and a
`runs.gate.Decision` into the exact answer that harness reads (stdout, stderr,
exit code), plus writing its settings (`install`). The decisions themselves are
harness-neutral and live in runs/gate_decision.py; the command is cli/gate.py.

A folder of its own, rather than more modules in cli/: each harness has its own
contract (field names, exit codes, settings files), more harnesses follow the
same shape, and the HTTP hooks of `handrail serve` will answer with the same
adapters without going through the command line.
"""

from typing import TYPE_CHECKING

from handrail.model.slotted import Slotted

if TYPE_CHECKING:
    import argparse
    from typing import TypeAlias

    Args: TypeAlias = argparse.Namespace  # a hook's options, as argparse read them


class HookInputError(Exception):
    """The hook input cannot be read: one line for stderr, never a traceback."""


class Answer(Slotted):
    __slots__ = ("exit_code", "stderr", "stdout")

    def __init__(
        self,
        stdout: str,
        stderr: str,
        exit_code: int,
    ) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.exit_code = exit_code
