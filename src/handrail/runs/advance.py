"""workflow_continue: a step's output judged (rules, then checks, then a person when the
step asks for one) and the run advanced, or the run's context changed."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from handrail.model.errors import BranchHeld, InvalidParams, RunNotActive, StateError, StepNotCurrent
from handrail.model.runs import EventType, NewEvent, RunRecord, RunStatus, RunUpdate
from handrail.runs import machine
from handrail.runs.awaiting import Awaiting
from handrail.runs.claims import admitted
from handrail.runs.ledger import Ledger, off_the_clock
from handrail.runs.position import Position, merge_context
from handrail.runs.questions import Questions
from handrail.runs.refusals import not_active, not_current
from handrail.runs.shapes import view
from handrail.runs.tree import Tree
from handrail.store.base import Conflict

if TYPE_CHECKING:
    from handrail.catalog import Snapshot
    from handrail.checks import Baseline, CheckResult
    from handrail.model.approvals import InputRequired
    from handrail.model.request import Request
    from handrail.model.workflow import Workflow


class Call(NamedTuple):
    """A workflow_continue call as each try of it reads it."""

    request: Request
    snapshot: Snapshot
    step_id: str | None
    output: str | None
    changes: Mapping[str, Any] | None


class Submitted(NamedTuple):
    """A step's output as the run stood when it came: the step current, its context
    with the call's changes merged."""

    workflow: Workflow
    position: Position
    current: Mapping[str, Any]
    context: Mapping[str, Any]
    step_id: str
    output: str


class Advance:
    """workflow_continue; a step may wait for a person (`awaiting`), who may be asked
    through the client (`questions`)."""

    def __init__(self, ledger: Ledger, questions: Questions, awaiting: Awaiting, tree: Tree) -> None:
        self.ledger = ledger
        self.questions = questions
        self.awaiting = awaiting
        self.tree = tree

    def continue_(
        self,
        request: Request,
        snapshot: Snapshot,
        run_id: str,
        step_id: str | None,
        output: str | None,
        changes: Mapping[str, Any] | None,
    ) -> dict[str, Any] | InputRequired:
        if output is not None and step_id is None:
            raise InvalidParams(data={"details": "stepId is required with output"})
        ledger = self.ledger
        # first try the run as this process last wrote it (no read): the write's version
        # check catches a run another process moved meanwhile, and a refusal is confirmed
        # against the database before it is given
        cached = ledger.recent.get(run_id)
        if getattr(ledger.store, "replicated", False):
            # replicas share this store and move its runs all the time: a copy from our last
            # write would be stale, and its conflict taken for a racing submission
            cached = None
        if cached is not None and cached.owner != ledger.owner(request):
            cached = None  # another person's: `run` says it is not found
        elif cached is not None and (cached.status == RunStatus.AWAITING_APPROVAL or output is None):
            cached = None  # a person may have decided, from another process: read it
        tried: dict[str, RunRecord | None] = {"cached": cached, "seen": None}
        call = Call(request, snapshot, step_id, output, changes)

        def once() -> dict[str, Any] | InputRequired:
            copy = tried["cached"]
            run = copy if copy is not None else ledger.run(request, run_id)
            seen = tried["seen"]
            if seen is not None and run.accepted != seen.accepted and step_id is not None:
                # another submission was accepted between our read and our write
                raise not_current(step_id, run, moved=True)
            tried["seen"] = run
            try:
                return self._continue_once(call, admitted(ledger, request, self.tree.healed(run)))
            except Conflict:
                tried["cached"] = None
                raise
            except (StepNotCurrent, RunNotActive, StateError, BranchHeld):
                if copy is None:
                    raise
                tried["cached"] = tried["seen"] = None  # judged on a copy: judge again on the database's
                raise Conflict(run_id) from None

        return self.tree.answered(ledger.retrying(run_id, once))

    def _continue_once(self, call: Call, run: RunRecord) -> dict[str, Any] | InputRequired:
        request, snapshot, step_id, output, changes = call
        if run.status == RunStatus.AWAITING_APPROVAL:  # a person approves (or declines) the step first
            return self.questions.while_waiting(request, run, step_id, changes)
        if step_id is not None and output is None:
            return self.awaiting.after_decision(run, step_id)
        submitting = step_id is not None and output is not None
        if not machine.allows(run.status, EventType.ACCEPTED if submitting else EventType.CONTEXT):
            if run.status == RunStatus.COMPLETED and output is None and not changes:
                last = self._last_approved(run)  # a person's approval ended it: say so
                if last is not None:
                    return self.awaiting.after_decision(run, last)
            raise not_active(run)
        workflow = self.ledger.pinned(snapshot, run)
        position = Position.stored(run.position)
        # the step the agent names is checked against the step current before its context
        # merges: the context it sends with a step's output (a runCondition's variable set
        # to what the step's own prompt says) must not move the run off that step first
        current = position.step
        if submitting and (current is None or current.get("id") != step_id):
            raise not_current(str(step_id), run, position=position)
        context: Mapping[str, Any] = run.context
        if changes:
            context = merge_context(run.context, changes)
            self.ledger.check_size(context)
        if step_id is None or output is None or current is None:  # context only
            return self._context_only(call, run, workflow, position, context)
        return self._submit(call, run, Submitted(workflow, position, current, context, step_id, output))

    def _context_only(
        self, call: Call, run: RunRecord, workflow: Workflow, position: Position, context: Mapping[str, Any]
    ) -> dict[str, Any]:
        """A call with no output: the context changed (and the run moved where a condition
        now lets it), no step accepted."""
        changed = bool(call.changes)
        moved = position.advanced(workflow, context)[0].to_stored() if changed else None
        update = RunUpdate(context=context if changed else None, position=moved)
        event = NewEvent(EventType.CONTEXT, data=_change_data(call.changes))
        written = self.ledger.write(run, update, [event], self.ledger.owner(call.request))
        return {
            "runId": run.id,
            "accepted": False,
            "status": written.status.value,
            "message": _context_message(call.changes, written),
            **view(written),
        }

    def _submit(self, call: Call, run: RunRecord, step: Submitted) -> dict[str, Any] | InputRequired:
        """A step's output: its rules, then its checks, then a person where the step asks
        for one; accepted, and the run moved on, when all pass."""
        from handrail.engine import validate_output  # lazy: loaded with the first step a run continues

        ledger, step_id, output, context = self.ledger, step.step_id, step.output, step.context
        changed, change_data = bool(call.changes), _change_data(call.changes)
        verdict = validate_output(step.workflow, step_id, output, context)
        if not verdict.valid:
            return self._rejected(call, run, step, (list(verdict.issues), list(verdict.suggestions)), [], {})
        # the step's checks (after the rules pass, before acceptance); then a person, when
        # the step's confirmation holds
        results = self._evidence(step.workflow, run, step_id, context)
        checked = [NewEvent(EventType.CHECK, step_id, r.to_event()) for r in results]
        failed = [r.issue() for r in results if not r.passed]
        if failed:
            found = ([i for i, _ in failed], [s for _, s in failed])
            return self._rejected(
                call, run, step, found, checked, {"checks": [r.to_event() for r in results]}
            )
        title = step.position.shown_title()
        if step.current.get("requireConfirmation"):
            waiting = NewEvent(
                EventType.AWAITING_APPROVAL, step_id, {"output": output, **title, **change_data}
            )
            # the context goes with the output; the step stays current until a person decides
            update = RunUpdate(context=context if changed else None)
            written = ledger.write(run, update, [*checked, waiting], ledger.owner(call.request))
            return self.questions.ask(call.request, written, step.current, output)
        after, _ = step.position.advanced(step.workflow, context, done=step_id)
        events = [*checked, NewEvent(EventType.ACCEPTED, step_id, {"output": output, **title, **change_data})]
        if after.is_complete:
            events.append(NewEvent(EventType.COMPLETED))
        update = RunUpdate(
            context=context if changed else None, position=after.to_stored(), accepted=run.accepted + 1
        )
        written = ledger.write(run, update, events, ledger.owner(call.request))
        evidence = {"checks": [r.to_event() for r in results]} if results else {}
        return {
            "runId": run.id,
            "accepted": True,
            "status": written.status.value,
            **evidence,
            **view(written),
        }

    def _rejected(
        self,
        call: Call,
        run: RunRecord,
        step: Submitted,
        found: tuple[list[str], list[str]],
        checked: list[NewEvent],
        shown: dict[str, Any],
    ) -> dict[str, Any]:
        """The output refused: a `rejected` event after the `check` events, the same step
        again, the run's context as it was (the event keeps the changes sent with it)."""
        issues, suggestions = found
        title = step.position.shown_title()
        data = {"output": step.output, **title, "issues": issues, "suggestions": suggestions}
        event = NewEvent(EventType.REJECTED, step.step_id, {**data, **_change_data(call.changes)})
        written = self.ledger.write(run, RunUpdate(), [*checked, event], self.ledger.owner(call.request))
        return {
            "runId": run.id,
            "accepted": False,
            "status": written.status.value,
            "issues": issues,
            "suggestions": suggestions,
            **shown,
            **view(written),  # the same step, with its loop where it has one
        }

    def _last_approved(self, run: RunRecord) -> str | None:
        """The step whose approval by a person was the run's last acceptance, if it was."""
        events = self.ledger.events(run.id)
        accepted = [i for i, e in enumerate(events) if e.type == EventType.ACCEPTED]
        if not accepted:
            return None
        i = accepted[-1]
        before = events[i - 1] if i > 0 else None
        if before is not None and before.type == EventType.APPROVED and before.step_id == events[i].step_id:
            return before.step_id
        return None

    def _evidence(
        self, workflow: Workflow, run: RunRecord, step_id: str, context: Mapping[str, Any]
    ) -> list[CheckResult]:
        node = workflow.nodes.get(step_id)
        step_checks = getattr(node, "checks", ())
        if not step_checks:
            return []
        from handrail.checks import CheckConfig, evaluate_checks  # lazy: with the first step checked

        baseline = None
        if any(getattr(c, "changes", False) for c in step_checks):
            baseline = self._baseline_of(run)
        with off_the_clock():  # a test suite may take minutes: not the request's budget
            started = time.monotonic()
            results = evaluate_checks(
                step_checks,
                run.workspace,
                context,
                baseline,
                self.ledger.settings.check_config or CheckConfig(),
                workflow.origin,
            )
        tracer = self.ledger.settings.tracer
        # each check's span ends when it did; they ran one after another
        end = time.time_ns()
        for r in reversed(results):
            start = end - (r.duration_ms or 0) * 1_000_000
            attributes: dict[str, str | bool] = {
                "handrail.check.type": r.type,
                "handrail.check.passed": r.passed,
                "handrail.check.pointer": r.pointer,
            }
            tracer.finished(f"check {r.type}", start, end, **attributes)
            end = start
        observer = self.ledger.settings.observer
        spent = time.monotonic() - started  # for checks that time nothing themselves
        for r in results:
            seconds = r.duration_ms / 1000 if r.duration_ms is not None else spent / len(results)
            observer.check(r.type, "passed" if r.passed else "failed", seconds)
        return results

    def _baseline_of(self, run: RunRecord) -> Baseline | None:
        from handrail.checks import Baseline  # lazy: loaded with the first step a run continues

        for event in self.ledger.events(run.id):
            if event.type == EventType.STARTED:
                wire = event.data.get("baseline")
                return Baseline.from_wire(wire) if isinstance(wire, Mapping) else None
        return None


def _change_data(changes: Mapping[str, Any] | None) -> dict[str, Any]:
    """The context changes a call sent, as its event keeps them."""
    return {"contextChanges": dict(changes)} if changes else {}


def _context_message(changes: Mapping[str, Any] | None, run: RunRecord) -> str:
    """What a call with only `context` did: it submits no step, so nothing is accepted."""
    if changes:
        set_keys = [k for k, v in changes.items() if v is not None]
        removed = [k for k, v in changes.items() if v is None]
        parts = [f"set {', '.join(f'`{k}`' for k in set_keys[:20])}"] if set_keys else []
        if removed:
            parts.append(f"removed {', '.join(f'`{k}`' for k in removed[:20])}")
        said = "The run's context was changed (" + "; ".join(parts) + "); no step was submitted, so "
    else:
        said = "Nothing was changed: the call had no output and no context, and no step was submitted, so "
    said += "nothing was accepted (accepted is false for that reason alone). "
    position = Position.stored(run.position)
    if position.step is not None:
        current = position.step.get("id")
        return said + f"The current step is `{current}`: send its output with stepId `{current}`."
    if position.is_complete:
        return said + "The run has no step left."
    return said + "The run still has no step it can run: set what guidance.missingContext lists."
