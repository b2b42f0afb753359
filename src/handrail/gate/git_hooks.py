"""git's hooks: `pre-commit`, `commit-msg` and `pre-push` (git help hooks).

git passes no command line, so the gate reads a commit as `shell:git commit` and a
push as `shell:git push REMOTE`. Every non-zero exit makes git abort, so git has no
non-blocking error: input the gate cannot read is a warning on stderr and exit 0.
"""

from __future__ import annotations

from handrail.gate import Answer
from handrail.runs.gate import Action, Decision, GateEvent

HARNESS = "git"
HOOKS = ("pre-commit", "commit-msg", "pre-push")
REFUSED = 1
MARK_BEGIN = "# >>> handrail gate >>>"
MARK_END = "# <<< handrail gate <<<"


def read_input(hook: str, args: list[str], stdin: bytes, cwd: str) -> tuple[GateEvent, list[str]]:
    """The gate's event, and warnings about input it could not read."""
    warnings: list[str] = []
    if hook == "pre-push":
        remote = args[0] if args else "origin"
        for number, line in enumerate(stdin.decode(errors="replace").splitlines(), 1):
            fields = line.split()
            if fields and len(fields) != 4:
                warnings.append(
                    f"pre-push input line {number} has {len(fields)} fields, expected 4; not checked"
                )
        action = Action("shell", f"git push {remote}", "git push")
    else:
        if hook == "commit-msg" and args:
            try:
                with open(args[0], "rb"):
                    pass
            except OSError:
                warnings.append(f"commit message file {args[0]} cannot be read; not checked")
        action = Action("shell", "git commit", "git commit")
    return GateEvent("before-tool", cwd, action=action), warnings


def answer(decision: Decision, warnings: list[str]) -> Answer:
    lines = [f"handrail gate: {warning}" for warning in warnings]
    if decision.verdict in ("deny", "block"):
        return Answer("", "\n".join([*lines, decision.text]) + "\n", REFUSED)
    return Answer("", "".join(line + "\n" for line in lines), 0)


def warning(text: str, refuse: bool) -> Answer:
    return Answer("", text + "\n", REFUSED if refuse else 0)
