"""Effects, not words (spec/gate.md): what a tool call did, checked after it, whatever
the command line said. Before a tool call that may change things, after it, and at
a stop, the gate compares what the step protects with the baseline it last took
(gate/baseline.py); what the step forbids of the difference is undone and kept
(gate/undo.py), recorded as a `violation` event, and told to the agent in the
harness's blocking form. A prompt, a session's start and a step's end (a run tool's
call) take a new baseline without judging: what changed between turns is the
person's. The baseline is read and written through gate/anchor.py, which checks the
file against the hash the run row keeps.
"""

from typing import TYPE_CHECKING, Any

from handrail.runs.gate import ACTIVE, Decision, GateEvent, Options, Protected, RunFacts, own_tool

if TYPE_CHECKING:
    from handrail.gate.baseline import GateFolder
    from handrail.runs.gate_store import Judged
    from handrail.runs.violations import Change, Forbidden

QUIET_KINDS = ("read", "web")  # actions that change nothing: no snapshot before or after them


class Call:
    """An event at an active run, with what judging what it changed takes.
    Slotted, not a NamedTuple: every hook process makes this class, at a tenth of the cost."""

    __slots__ = (
        "event",
        "facts",
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
    ) -> None:
        self.store = store
        self.run = run  # the run's row
        self.facts = facts
        self.event = event
        self.options = options
        self.protected = protected
        self.home = home  # handrail's home, where the gate keeps its folders


def follow(
    store: Any,
    event: GateEvent,
    judged: "Judged",
    options: Options,
    protected: Protected,
    home: str,
) -> Decision:
    """The decision, or a refusal naming what was undone."""
    decision, run, facts = judged
    if run is None or facts is None or facts.status not in ACTIVE:
        return decision
    action = event.action
    kind = event.kind
    call = Call(store, run, facts, event, options, protected, home)
    if kind in ("session", "prompt"):
        if facts.bound is None or event.session is None or facts.bound == event.session:
            rebase(store, run, facts, home, kind)  # the person's turn: what changed since is theirs
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
        rebase(store, run, facts, home, kind)  # a new step: its baseline starts here
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


def _folder(facts: RunFacts, home: str) -> "GateFolder":
    from handrail.gate import baseline  # lazy: only a call that may change things takes a snapshot

    return baseline.gate_folder(home, facts.run_id)


def rebase(store: Any, run: Any, facts: RunFacts, home: str, kind: str) -> None:
    """A new baseline, nothing judged; the repository as the anchored one found it."""
    from handrail.gate import anchor, baseline  # lazy: only a call that may change things takes a snapshot

    folder = _folder(facts, home)
    with baseline.Locked(folder):
        try:
            kept = anchor.loaded(folder, store, run, facts, kind)
        except anchor.Untrusted:  # recorded; the repository is found afresh
            kept = None
        repo = (
            kept.repo if kept is not None and kept.repo is not None else baseline.find_repo(facts.workspace)
        )
        now = baseline.take(facts.workspace, folder, repo, (home,))
        anchor.save(store, run, folder, now, repo, facts.step_id, kept.anchor if kept is not None else None)


def check(call: Call) -> str | None:
    """Compare, undo, record; the agent's message when something was undone."""
    from handrail.gate import baseline  # lazy: only a call that may change things needs it

    with baseline.Locked(_folder(call.facts, call.home)):
        return _check(call)


def _check(call: Call) -> str | None:
    from handrail.gate import anchor, baseline, undo  # lazy: only a call that may change things needs them
    from handrail.runs import violations  # lazy: as above

    store, run, facts, event = call.store, call.run, call.facts, call.event
    folder = _folder(facts, call.home)
    leave_out = (call.home,)
    kept = anchor.loaded(folder, store, run, facts, event.kind)
    repo = kept.repo if kept is not None and kept.repo is not None else baseline.find_repo(facts.workspace)
    now = baseline.take(facts.workspace, folder, repo, leave_out)
    if kept is None:
        anchor.save(store, run, folder, now, repo, facts.step_id, None)
        return None
    before = kept.snapshot
    if now == before and kept.rewritten is None:
        if baseline.step_of(folder) != facts.step_id:
            anchor.save(store, run, folder, now, repo, facts.step_id, kept.anchor)
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


def staged_forbidden(call: Call, staged: "list[Change]") -> "list[Forbidden]":
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
