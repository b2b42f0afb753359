"""git's hooks: `pre-commit`, `commit-msg`, `pre-push` and `reference-transaction`
(git help hooks).

git passes no command line, so the gate reads a commit as `shell:git commit` and a
push as `shell:git push REMOTE`. `reference-transaction` runs for every ref update,
whatever command makes it (`am`, `revert`, `cherry-pick`, `update-ref`, an alias):
in its `prepared` state, an update that brings a branch, a tag or a detached HEAD
commits no ref reached before is read as `shell:git commit`, so a step that denies
commits refuses it before it lands. The gate's own refs (`refs/handrail/`) are not
judged. Every non-zero exit makes git abort, so git has no
non-blocking error: input the gate cannot read is a warning on stderr and exit 0.
"""

from __future__ import annotations

from handrail.gate import Answer
from handrail.runs.gate import Action, Decision, GateEvent

HARNESS = "git"
HOOKS = ("pre-commit", "commit-msg", "pre-push", "reference-transaction")
REFUSED = 1
MARK_BEGIN = "# >>> handrail gate >>>"
MARK_END = "# <<< handrail gate <<<"


def read_input(hook: str, args: list[str], stdin: bytes, cwd: str) -> tuple[GateEvent, list[str]]:
    """The gate's event, and warnings about input it could not read."""
    warnings: list[str] = []
    if hook == "reference-transaction":
        state = args[0] if args else ""
        landing = state == "prepared" and brings_commits(stdin, cwd)
        action = Action("shell", "git commit", "git reference-transaction") if landing else None
        return GateEvent("before-tool", cwd, action=action), warnings
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


ZERO = "0" * 40
CHECKED = ("refs/heads/", "refs/tags/")


def brings_commits(stdin: bytes, cwd: str) -> bool:
    """Whether a transaction's updates (`OLD NEW REF` lines) bring commits that no ref
    reaches yet (the gate's own refs left out)."""
    import subprocess  # lazy: only a ref transaction needs it

    news: list[str] = []
    for line in stdin.decode(errors="replace").splitlines():
        fields = line.split()
        if len(fields) != 3:
            continue
        _, new, ref = fields
        if new.strip("0") and (ref == "HEAD" or ref.startswith(CHECKED)):
            news.append(new)
    if not news:
        return False
    done = subprocess.run(
        ["git", "rev-list", "-n", "1", *news, "--not", "--exclude=refs/handrail/*", "--all"],
        cwd=cwd,
        capture_output=True,
        timeout=120,
        check=False,
    )
    return done.returncode != 0 or bool(done.stdout.strip())


def answer(decision: Decision, warnings: list[str]) -> Answer:
    lines = [f"handrail gate: {warning}" for warning in warnings]
    if decision.verdict in ("deny", "block"):
        return Answer("", "\n".join([*lines, decision.text]) + "\n", REFUSED)
    return Answer("", "".join(line + "\n" for line in lines), 0)


def warning(text: str, refuse: bool) -> Answer:
    return Answer("", text + "\n", REFUSED if refuse else 0)
