"""workflow_continue: a step's output judged (rules, then checks, then a person when the
step asks for one) and the run advanced, or the run's context changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from handrail.errors import InvalidParams, RunNotActive, StateError, StepNotCurrent
from handrail.runs.base import (
    MAX_RETRIES,
    _not_active,
    _not_current,
    _off_the_clock,
    merge_context,
    shown_title,
)
from handrail.runs.decisions import Decisions
from handrail.store.base import ACTIVE_STATUSES, Conflict, NewEvent, RunRecord, RunUpdate

if TYPE_CHECKING:
    from handrail.catalog import Snapshot
    from handrail.checks import Baseline, CheckResult
    from handrail.model import Workflow
    from handrail.request import Request
    from handrail.runs.approvals import InputRequired


class Advance(Decisions):
    """workflow_continue, over the decisions of a person (a step may wait for one)."""

    # -- workflow_continue -----------------------------------------------------------
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
        seen: RunRecord | None = None
        # first try the run as this process last wrote it (no read): the write's version
        # check catches a run another process moved meanwhile, and a refusal is confirmed
        # against the database before it is given
        cached = self._recent.get(run_id)
        if getattr(self.store, "replicated", False):
            # replicas share this store and move its runs all the time: a copy from our last
            # write would be stale, and its conflict taken for a racing submission
            cached = None
        if cached is not None and cached.owner != self.owner(request):
            cached = None  # another person's: `run` says it is not found
        elif cached is not None and (cached.status == "awaiting_approval" or output is None):
            cached = None  # a person may have decided, from another process: read it
        for _ in range(MAX_RETRIES):
            run = cached if cached is not None else self.run(request, run_id)
            if seen is not None and run.accepted != seen.accepted and step_id is not None:
                # another submission was accepted between our read and our write
                raise _not_current(step_id, run, moved=True)
            seen = run
            try:
                return self._continue_once(request, snapshot, run, step_id, output, changes)
            except Conflict:
                cached = None
                continue
            except (StepNotCurrent, RunNotActive, StateError):
                if cached is None:
                    raise
                cached = seen = None  # judged on a copy: judge again on the database's
        raise StateError("the run is changing too fast to write; try again", {"runId": run_id})

    def _continue_once(
        self,
        request: Request,
        snapshot: Snapshot,
        run: RunRecord,
        step_id: str | None,
        output: str | None,
        changes: Mapping[str, Any] | None,
    ) -> dict[str, Any] | InputRequired:
        from handrail.engine import next_step, validate_output
        from handrail.result_json import next_json

        if run.status == "awaiting_approval":  # a person approves (or declines) the step first
            return self._awaiting(request, run, step_id, changes)
        if step_id is not None and output is None:
            return self._after_decision(run, step_id)
        if run.status not in ACTIVE_STATUSES:
            if run.status == "completed" and output is None and not changes:
                last = self._last_approved(run)  # a person's approval ended it: say so
                if last is not None:
                    return self._after_decision(run, last)
            raise _not_active(run)
        workflow = self.pinned(snapshot, run)
        position: Mapping[str, Any] = run.position
        context: Mapping[str, Any] = run.context
        changed = bool(changes)
        if changes:
            context = merge_context(run.context, changes)
            self._check_size(context)
            position = next_json(
                next_step(workflow, position["completedSteps"], context, state=position.get("state"))
            )
        update = RunUpdate(context=context if changed else None, position=position if changed else None)
        change_data = {"contextChanges": dict(changes)} if changes else {}
        if step_id is None or output is None:  # context only
            written = self._write(run, update, [NewEvent("context", data=change_data)], self.owner(request))
            return {
                "runId": run.id,
                "accepted": False,
                "status": written.status,
                "message": _context_message(changes, written),
                **self._view(written),
            }
        current = position.get("step")
        if not isinstance(current, dict) or current.get("id") != step_id:
            raise _not_current(step_id, run, position=position)
        verdict = validate_output(workflow, step_id, output, context)
        title = shown_title(position)
        if not verdict.valid:
            issues, suggestions = list(verdict.issues), list(verdict.suggestions)
            event = NewEvent(
                "rejected",
                step_id,
                {"output": output, **title, "issues": issues, "suggestions": suggestions, **change_data},
            )
            written = self._write(run, update, [event], self.owner(request))
            return {
                "runId": run.id,
                "accepted": False,
                "status": written.status,
                "issues": issues,
                "suggestions": suggestions,
                **self._view(written),  # the same step, with its loop where it has one
            }
        # the step's checks (after the rules pass, before acceptance); then a person, when
        # the step's confirmation holds
        results = self._evidence(workflow, run, step_id, context)
        checked = [NewEvent("check", step_id, r.to_event()) for r in results]
        failed = [r.issue() for r in results if not r.passed]
        if failed:
            issues, suggestions = [i for i, _ in failed], [s for _, s in failed]
            event = NewEvent(
                "rejected",
                step_id,
                {"output": output, **title, "issues": issues, "suggestions": suggestions, **change_data},
            )
            written = self._write(run, update, [*checked, event], self.owner(request))
            return {
                "runId": run.id,
                "accepted": False,
                "status": written.status,
                "issues": issues,
                "suggestions": suggestions,
                "checks": [r.to_event() for r in results],
                **self._view(written),
            }
        if current.get("requireConfirmation"):
            waiting = NewEvent("awaiting_approval", step_id, {"output": output, **title, **change_data})
            written = self._write(
                run,
                RunUpdate(status="awaiting_approval", context=update.context, position=update.position),
                [*checked, waiting],
                self.owner(request),
            )
            return self._ask(request, written, current, output)
        completed = [*position["completedSteps"], step_id]
        result = next_step(workflow, completed, context, state=position.get("state"))
        after = next_json(result)
        status = "completed" if result.is_complete else "active"
        events = [*checked, NewEvent("accepted", step_id, {"output": output, **title, **change_data})]
        if status == "completed":
            events.append(NewEvent("completed"))
        written = self._write(
            run,
            RunUpdate(
                status=status,
                context=context if changed else None,
                position=after,
                accepted=run.accepted + 1,
            ),
            events,
            self.owner(request),
        )
        evidence = {"checks": [r.to_event() for r in results]} if results else {}
        return {
            "runId": run.id,
            "accepted": True,
            "status": written.status,
            **evidence,
            **self._view(written),
        }

    def _last_approved(self, run: RunRecord) -> str | None:
        """The step whose approval by a person was the run's last acceptance, if it was."""
        events = self.store.events(run.id)
        accepted = [i for i, e in enumerate(events) if e.type == "accepted"]
        if not accepted:
            return None
        i = accepted[-1]
        before = events[i - 1] if i > 0 else None
        if before is not None and before.type == "approved" and before.step_id == events[i].step_id:
            return before.step_id
        return None

    def _evidence(
        self, workflow: Workflow, run: RunRecord, step_id: str, context: Mapping[str, Any]
    ) -> list[CheckResult]:
        node = workflow.nodes.get(step_id)
        step_checks = getattr(node, "checks", ())
        if not step_checks:
            return []
        from handrail.checks import CheckConfig, evaluate_checks

        baseline = None
        if any(getattr(c, "changes", False) for c in step_checks):
            baseline = self._baseline_of(run)
        with _off_the_clock():  # a test suite may take minutes: not the request's budget
            return evaluate_checks(
                step_checks,
                run.workspace,
                context,
                baseline,
                self.check_config or CheckConfig(),
                workflow.origin,
            )

    def _baseline_of(self, run: RunRecord) -> Baseline | None:
        from handrail.checks import Baseline

        for event in self.store.events(run.id):
            if event.type == "started":
                wire = event.data.get("baseline")
                return Baseline.from_wire(wire) if isinstance(wire, Mapping) else None
        return None


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
    step = run.position.get("step")
    if isinstance(step, Mapping):
        current = step.get("id")
        return said + f"The current step is `{current}`: send its output with stepId `{current}`."
    if run.position.get("isComplete"):
        return said + "The run has no step left."
    return said + "The run still has no step it can run: set what guidance.missingContext lists."
