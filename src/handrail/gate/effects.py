"""Effects, not words (spec/gate.md): what a tool call did, checked after it, whatever
the command line said. Before a tool call that may change things, after it, and at
a stop, the gate compares what the step protects with the baseline it last took
(gate/baseline.py); what the step forbids of the difference is undone and kept
(gate/undo.py), recorded as a `violation` event, and told to the agent in the
harness's blocking form. A prompt, a session's start and a step's end (a run tool's
call) take a new baseline without judging: what changed between turns is the
person's. The baseline is read and written through gate/anchor.py, which checks the
file against the hash the run row keeps. A server keeps, beside each run's baseline, a
stat fingerprint of what it covers (gate/fingerprint.py): a check that finds every
entry as it was answers "nothing changed" without running git.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from handrail.runs.gate import ACTIVE, Decision, own_tool

if TYPE_CHECKING:
    from handrail.gate.baseline import GateFolder, Repo
    from handrail.gate.fingerprint import Fingerprints
    from handrail.runs.gate import GateEvent, Options, Protected, RunFacts
    from handrail.runs.gate_store import Judged
    from handrail.runs.violations import Change, Forbidden

QUIET_KINDS = ("read", "web")  # actions that change nothing: no snapshot before or after them


class Call:
    """An event at an active run, with what judging what it changed takes.
    Slotted, not a NamedTuple: every hook process makes this class, at a tenth of the cost."""

    __slots__ = (
        "event",
        "facts",
        "fingerprints",
        "home",
        "options",
        "protected",
        "run",
        "store",
    )

    def __init__(
        self,
        store: Any,
        run: Any,
        facts: RunFacts,
        event: GateEvent,
        options: Options,
        protected: Protected,
        home: str,
        fingerprints: Fingerprints | None = None,
    ) -> None:
        self.store = store
        self.run = run  # the run's row
        self.facts = facts
        self.event = event
        self.options = options
        self.protected = protected
        self.home = home  # handrail's home, where the gate keeps its folders
        self.fingerprints = fingerprints  # a server's, kept between its hooks


def follow(
    store: Any,
    event: GateEvent,
    judged: Judged,
    options: Options,
    protected: Protected,
    home: str,
    fingerprints: Fingerprints | None = None,
) -> Decision:
    """The decision, or a refusal naming what was undone. `fingerprints`: a server's, to
    answer a check that finds nothing changed without git."""
    decision, run, facts = judged
    if run is None or facts is None or facts.status not in ACTIVE:
        return decision
    action = event.action
    kind = event.kind
    call = Call(store, run, facts, event, options, protected, home, fingerprints)
    if kind in ("session", "prompt"):
        if facts.bound is None or event.session is None or facts.bound == event.session:
            # the person's turn: what changed since is theirs
            rebase(store, run, facts, home, kind, fingerprints)
            return decision
        # another session (a harness started from the agent's own shell, say): its start
        # or prompt is no turn of the person's, so what changed is checked, not taken in
        told = _checked(call)
        if told is None:
            return decision
        before = decision.text + "\n\n" if decision.verdict == "context" and decision.text else ""
        return Decision("context", before + told)
    if (
        kind == "after-tool"
        and action is not None
        and own_tool(action.target)
        and _step_moved(run, facts, home)
    ):
        rebase(store, run, facts, home, kind, fingerprints)  # a new step: its baseline starts here
        return decision
    if kind == "before-tool":
        if decision.verdict != "allow" or action is None or action.kind in QUIET_KINDS:
            return decision
    elif kind == "after-tool":
        if action is None or action.kind in QUIET_KINDS:
            return decision
    elif kind != "stop" or event.internal:
        return decision
    told = _checked(call)
    if told is None:
        return decision
    return Decision("deny" if kind == "before-tool" else "block", told)


def _checked(call: Call) -> str | None:
    try:
        return check(call)
    except Exception as exc:  # what the call did cannot be judged: refused, never let by
        reason = " ".join(str(exc).split())[:300] or type(exc).__name__
        return (
            f"handrail: the gate could not check what the last tool call changed ({reason}); "
            f"run {call.facts.run_id} is active, so this is refused until it can."
        )


def _step_moved(run: Any, facts: RunFacts, home: str) -> bool:
    """Whether the baseline was taken at another step; never by a file the row does not
    anchor (then the check finds the rewrite)."""
    from handrail.gate import anchor, baseline  # lazy: only a call that may change things takes a snapshot

    folder = _folder(facts, home)
    return anchor.matches(folder, run) and baseline.step_of(folder) != facts.step_id


def _folder(facts: RunFacts, home: str) -> GateFolder:
    from handrail.gate import baseline  # lazy: only a call that may change things takes a snapshot

    return baseline.gate_folder(home, facts.run_id)


def rebase(
    store: Any, run: Any, facts: RunFacts, home: str, kind: str, fingerprints: Fingerprints | None = None
) -> None:
    """A new baseline, nothing judged; the repository as the anchored one found it."""
    from handrail.gate import anchor, baseline  # lazy: only a call that may change things takes a snapshot

    folder = _folder(facts, home)
    with baseline.Locked(folder):
        since = _clock(fingerprints, facts, folder)
        try:
            kept = anchor.loaded(folder, store, run, facts, kind)
        except anchor.Untrusted:  # recorded; the repository is found afresh
            kept = None
        repo = (
            kept.repo if kept is not None and kept.repo is not None else baseline.find_repo(facts.workspace)
        )
        now = baseline.take(facts.workspace, folder, repo, (home,))
        was = kept.anchor if kept is not None else None
        sha = anchor.save(store, run, folder, now, repo, facts.step_id, was)
        _remember(fingerprints, facts, folder, repo, home, since, sha)


def check(call: Call) -> str | None:
    """Compare, undo, record; the agent's message when something was undone."""
    from handrail.gate import baseline  # lazy: only a call that may change things needs it

    folder = _folder(call.facts, call.home)
    with baseline.Locked(folder):
        if _still(call, folder):
            return None
        return _check(call)


def _still(call: Call, folder: GateFolder) -> bool:
    """Whether the server's fingerprint of this run's baseline vouches that nothing it
    covers changed: the baseline the row anchors, at this step, every entry as it was."""
    import hashlib  # lazy: only a server keeps fingerprints

    from handrail.gate import baseline, fingerprint  # lazy: as above
    from handrail.runs import gate_digest  # lazy: as above

    kept = call.fingerprints.get(call.facts.run_id) if call.fingerprints is not None else None
    if kept is None or kept.step != call.facts.step_id or kept.workspace != call.facts.workspace:
        return False
    if gate_digest.anchor_of(call.run.gate) != kept.anchor:
        return False
    try:
        with open(os.path.join(folder.path, baseline.BASELINE), "rb") as opened:
            if hashlib.sha256(opened.read()).hexdigest() != kept.anchor:
                return False  # rewritten since: the full check finds it
    except OSError:
        return False
    return fingerprint.unchanged(kept)


def _clock(fingerprints: Fingerprints | None, facts: RunFacts, folder: GateFolder) -> int | None:
    """The run's fingerprint dropped (the full check runs), and the filesystem's clock
    read before the snapshot, for the next one; None without fingerprints."""
    from handrail.gate import fingerprint  # lazy: only a server keeps fingerprints

    if fingerprints is None:
        return None
    fingerprints.put(facts.run_id, None)
    return fingerprint.clock(folder)


def _remember(
    fingerprints: Fingerprints | None,
    facts: RunFacts,
    folder: GateFolder,
    repo: Repo | None,
    home: str,
    since: int | None,
    sha: str | None,
) -> None:
    """The fingerprint of the baseline anchored as `sha`, which is the repository as it
    is, taken after it with the clock read before it; none where it cannot vouch."""
    from subprocess import SubprocessError  # lazy: only a server keeps fingerprints

    from handrail.gate import fingerprint  # lazy: only a server keeps fingerprints

    if fingerprints is None or since is None or repo is None or sha is None:
        return
    try:
        found = fingerprint.take(repo, facts.workspace, folder.index_file, (home,), since, sha, facts.step_id)
    except (OSError, SubprocessError, ValueError):  # none: the full check runs next time
        found = None
    fingerprints.put(facts.run_id, found)


def _check(call: Call) -> str | None:
    from handrail.gate import anchor, baseline, undo  # lazy: only a call that may change things needs them
    from handrail.runs import violations  # lazy: as above

    store, run, facts, event = call.store, call.run, call.facts, call.event
    folder = _folder(facts, call.home)
    leave_out = (call.home,)
    since = _clock(call.fingerprints, facts, folder)
    kept = anchor.loaded(folder, store, run, facts, event.kind)
    repo = kept.repo if kept is not None and kept.repo is not None else baseline.find_repo(facts.workspace)
    now = baseline.take(facts.workspace, folder, repo, leave_out)
    if kept is None:
        anchor.save(store, run, folder, now, repo, facts.step_id, None)
        return None
    before = kept.snapshot
    if now == before and kept.rewritten is None:
        sha = kept.anchor
        if baseline.step_of(folder) != facts.step_id:
            sha = anchor.save(store, run, folder, now, repo, facts.step_id, kept.anchor)
        # a fingerprint only where nothing changed: after a change, the next call often changes
        # more, and what just changed is too new to vouch for (its cost, on a large tree, is
        # about a `git status`'s)
        _remember(call.fingerprints, facts, folder, repo, call.home, since, sha)
        return None
    found = violations.forbidden(
        facts, undo.changes(repo, before, now), call.options, call.protected, event.session
    )
    found += staged_forbidden(call, undo.staged_changes(repo, before, now))
    if not found and kept.rewritten is None:
        anchor.save(store, run, folder, now, repo, facts.step_id, kept.anchor)
        return None
    undone = undo.undo(repo, folder, facts.run_id, before, now, found)
    lines = anchor.set_aside(kept, undone.kept[0]) + undone.lines
    if kept.rewritten is not None:
        found = [anchor.forbidden(folder, facts), *found]
    tool = event.action.tool if event.action is not None else None
    data = violations.event_data(event.kind, found, lines, undone.kept, event.session, tool)
    after = baseline.take(facts.workspace, folder, repo, leave_out)
    anchor.save(store, run, folder, after, repo, facts.step_id, kept.anchor, data)
    return violations.message(facts, found, lines, undone.kept)


def staged_forbidden(call: Call, staged: list[Change]) -> list[Forbidden]:
    """The staged changes the step forbids: each judged as the same change to the work
    tree's file would be, and kept as what it is, an entry of the index."""
    from handrail.runs import violations  # lazy: only a changed index needs it

    as_files = [change._replace(what="file") for change in staged]
    return [
        found._replace(change=found.change._replace(what="staged"))
        for found in violations.forbidden(
            call.facts, as_files, call.options, call.protected, call.event.session
        )
    ]
