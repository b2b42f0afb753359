"""`Runs`: the run operations of one server, over the pure engine.

The run row holds where the run stands (runs/position.py) and its context; each call
replays the engine from there, so the server, never the client, decides what is
done. Every answer is built from what the store has committed: nothing is
acknowledged before it is durable.

`Runs` is composed of small parts, each in a module named for what it holds: the
store and who asks (ledger.py), the transition table (machine.py), a run waiting for
a person (awaiting.py), their decisions (decisions.py) and the questions put through
the client (questions.py), workflow_continue (advance.py), the output shapes
(shapes.py). This module holds the run's lifecycle: start, the open runs and a
run's recap (resume), abandon.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from handrail.model.runs import ACTIVE_STATUSES, Event, EventType, NewEvent, RunRecord, RunStatus, RunUpdate
from handrail.runs import abandons, machine
from handrail.runs.advance import Advance
from handrail.runs.approvers import recorded_channels, reminders_due
from handrail.runs.awaiting import Awaiting
from handrail.runs.claims import Claims, admitted, renewed
from handrail.runs.decisions import Decisions
from handrail.runs.ledger import Ledger, RunSettings, new_run, new_run_id
from handrail.runs.links import VIA, Link, Links
from handrail.runs.migration import Migrations
from handrail.runs.passkeys import Passkeys
from handrail.runs.position import Position, merge_context
from handrail.runs.presence import signature_break
from handrail.runs.questions import Questions
from handrail.runs.refusals import not_active
from handrail.runs.replay import replay_break
from handrail.runs.shapes import recap, shaped, summary, view
from handrail.runs.sign_ins import SignIns
from handrail.runs.tree import Tree
from handrail.store.base import Notification
from handrail.store.chain import Break, check_run
from handrail.store.stats import StatsFilter, workflow_stats

if TYPE_CHECKING:
    from typing import Unpack

    from handrail.catalog import Snapshot
    from handrail.model.request import Request
    from handrail.model.workflow import Workflow
    from handrail.runs.approvers import Pending
    from handrail.runs.decisions import How, Verdict
    from handrail.store import RunStore

__all__ = ["Runs", "merge_context", "new_run_id", "summary"]

OPEN_RUNS_LISTED = 20
# Runs awaiting an approval are read this many at a time, and all of them are read: no
# number of other people's waiting runs can hide one from its approver or from the sweep.
WAITING_BATCH = 500
OPEN_RUN_FIELDS = ("runId", "workflowId", "goal", "status", "currentStep", "updatedAt", "workspace")


class Runs:
    """The run operations of one server. `store_factory` opens the store on first use,
    so a server that nobody asks about runs never touches the database."""

    def __init__(self, store_factory: Callable[[], RunStore], settings: RunSettings | None = None) -> None:
        """`settings`: the server's for its runs, made once (runs/ledger.py); None: the defaults."""
        self.ledger = Ledger(store_factory, settings)
        self.awaiting = Awaiting(self.ledger)  # a run waiting for a person
        self.decisions = Decisions(self.ledger, self.awaiting)
        self.tree = Tree(self.ledger)
        self.passkeys = Passkeys(self.ledger)
        self.links = Links(self.ledger)
        self.sign_ins = SignIns(self.ledger)  # the dashboard's sessions, shared by its servers
        questions = Questions(self.ledger, self.awaiting, self.decisions)  # asked through the client
        self.advance = Advance(self.ledger, questions, self.awaiting, self.tree)
        # workflow_continue is the advance's own: its signature is written once, there
        self.continue_ = self.advance.continue_
        # `handrail runs migrate`: a run moved to a newer version of its workflow
        self.migrations = Migrations(self.ledger)
        self.migrate = self.migrations.migrate
        self.claims = Claims(self.ledger, self.tree)  # workflow_claim

    # -- the server's settings, kept by the ledger -------------------------------------
    @property
    def store(self) -> RunStore:
        return self.ledger.store

    @property
    def settings(self) -> RunSettings:
        return self.ledger.settings

    @property
    def default_owner(self) -> str:
        return self.ledger.settings.owner

    @property
    def database_file(self) -> str | None:
        return self.ledger.settings.database_file

    def owner(self, request: Request) -> str:
        return self.ledger.owner(request)

    def default_workspace(self, request: Request) -> str:
        return self.ledger.default_workspace(request)

    def workspace(self, request: Request, value: str | None) -> str:
        return self.ledger.workspace(request, value)

    def run(self, request: Request, run_id: str) -> RunRecord:
        return self.ledger.run(request, run_id)

    def pinned(self, snapshot: Snapshot, run: RunRecord) -> Workflow:
        return self.ledger.pinned(snapshot, run)

    def close(self) -> None:
        self.ledger.close()

    # -- a person's decisions ----------------------------------------------------------
    def person_abandons(self, run: RunRecord) -> bool:
        """Whether only a person may end the run (its workflow's `"abandon": "person"`)."""
        return abandons.only_a_person(self.store, run)

    def decide(
        self, request: Request, run_id: str, verdict: Verdict, *, person: str, **how: Unpack[How]
    ) -> dict[str, Any]:
        """A person approves or declines the step the run waits on (`Decisions.decide`);
        then what that means for its tree: an accepted step may reach a parallel loop, and
        a child run's decline fails its parent's step."""
        return self.tree.answered(self.decisions.decide(request, run_id, verdict, person=person, **how))

    def by_link(self, run_id: str, token: str, person: str | None = None) -> tuple[Link, dict[str, Any]]:
        """The decision a one-time link (runs/links.py) was sent for, made as its person,
        who opened it; `person`: who opened it, when the server knows (its tokens)."""
        link = self.links.usable(run_id, token)
        if person is not None and person != link.person:
            raise self.links.refused(run_id, f"it was sent for {link.person}, not for {person}")
        owner = self.links.owner_request(run_id)
        answer = self.decide(owner, run_id, link.decision, person=link.person, comment=link.comment, via=VIA)
        return link, answer

    def pending_approval(self, run: RunRecord) -> dict[str, Any] | None:
        return self.awaiting.pending_approval(run)

    def waiting(self, run: RunRecord) -> Pending | None:
        """The approval the run waits on, with its rule (who may decide); None without one."""
        return self.awaiting.approval(run)

    def readable(self, request: Request, run_id: str, person: str) -> RunRecord:
        """The run, when it is `person`'s own or waits for an approval they may give."""
        return self.decisions.readable(request, run_id, person)

    def roles(self, person: str) -> frozenset[str]:
        return self.ledger.settings.roles(person)

    def may_decide(self, request: Request, run: RunRecord, person: str, via: str) -> str | None:
        """Why `person` may not decide on the run's pending approval through `via` (None:
        they may). A run that waits for none: the refusal says so."""
        found = self.awaiting.approval(run)
        if found is None:
            return f"the run is {run.status}, not waiting for a person's approval"
        return self.decisions.refusal(request, found, person, via, approve=False)

    def awaiting_approval(self, batch: int = WAITING_BATCH) -> Iterator[RunRecord]:
        """Every run awaiting an approval, read `batch` at a time in id order."""
        after = ""  # sorts before every id
        while True:
            page = self.store.list_runs(statuses=[RunStatus.AWAITING_APPROVAL], after_id=after, limit=batch)
            yield from page
            if len(page) < batch:
                return
            after = page[-1].id

    def sweep_approvals(self) -> int:
        """Record what the passing of time did to the pending approvals: a `reminded`
        event each `remindAfter`, an `escalated` event once `escalateAfter` has passed.
        Returns how many events were written. Several servers on one store may sweep at
        once: a write that meets another's is read afresh, so each event is written once."""
        written = 0
        if not self.ledger.exists:
            return 0
        for listed in self.awaiting_approval():

            def once(run_id: str = listed.id) -> int:
                run = self.store.get(run_id)
                if run is None:
                    return 0
                events = self.ledger.events(run.id)
                found = self.awaiting.approval(run, events)
                if found is None:
                    return 0
                due: list[NewEvent] = []
                rule = found.rule
                if reminders_due(events, rule, datetime.now(UTC)):
                    due.append(
                        NewEvent(EventType.REMINDED, found.step_id, {"approvers": list(found.allowed)})
                    )
                escalated = any(e.type == EventType.ESCALATED for e in events if e.at >= found.since)
                if found.escalated and rule.escalate_role is not None and not escalated:
                    due.append(NewEvent(EventType.ESCALATED, found.step_id, {"role": rule.escalate_role}))
                if due:
                    self.ledger.write(run, RunUpdate(), due, "handrail")
                return len(due)

            written += self.ledger.retrying(listed.id, once)
        return written

    def waiting_for(self, request: Request, person: str, limit: int = 100) -> list[RunRecord]:
        """Runs awaiting an approval `person` may give, their own among them: the `limit`
        longest waiting, found among every waiting run."""
        roles = self.ledger.settings.roles(person)

        def theirs() -> Iterator[RunRecord]:
            for run in self.awaiting_approval():
                waiting = self.awaiting.approval(run)
                if waiting is None or waiting.refusal(person, roles) is not None:
                    continue
                if run.owner == person or waiting.may_see(person, roles):
                    yield run

        return heapq.nsmallest(limit, theirs(), key=lambda r: r.updated_at)

    # -- workflow_start --------------------------------------------------------------
    def start(
        self,
        request: Request,
        workflow: Workflow,
        goal: str,
        workspace: str | None,
        context: Mapping[str, Any] | None,
        *,
        workflow_folders: Sequence[str] = (),
    ) -> dict[str, Any]:
        """`workflow_folders`: the sources the server was given, kept in the `started` event
        for the gate, which protects them while the run is active."""
        folder = self.workspace(request, workspace)
        context = dict(context or {})
        baseline = _baseline(workflow, folder)
        position, _ = Position((), (), None, None, False).advanced(workflow, context)
        source_hash = workflow.content_hash
        self.store.put_source(source_hash, workflow.id, workflow.document)
        more = {
            **({"baseline": baseline} if baseline is not None else {}),
            **({"workflowFolders": list(workflow_folders)} if workflow_folders else {}),
            **recorded_channels(self.ledger.settings.approval_channels),
        }
        pinned = (workflow.id, workflow.version, source_hash)
        run, events = new_run(
            new_run_id(), self.owner(request), folder, pinned, goal, context, position, more
        )
        run = self.tree.after(self.ledger.create(run, events))
        fields = ("runId", "status", "workflowId", "workflowVersion", "goal")
        return {**shaped(run, fields), **view(run), **self.tree.shown(run)}

    # -- what the dashboard and `handrail runs` read --------------------------------
    def listing(
        self,
        request: Request,
        *,
        statuses: Sequence[str] | None = None,
        workflow_id: str | None = None,
        text: str | None = None,
        limit: int = 100,
    ) -> list[RunRecord]:
        """The asking person's runs, most recently updated first, filtered in the store."""
        return self.store.list_runs(
            statuses=statuses, owner=self.owner(request), workflow_id=workflow_id, text=text, limit=limit
        )

    def insights(self, request: Request, workflow_id: str | None = None) -> list[dict[str, Any]]:
        """What the asking person's runs tell, per workflow (spec/stats.md); everyone's
        runs are for whoever can open the database (`handrail stats`)."""
        where = StatsFilter(workflow_id=workflow_id, person=self.owner(request))
        return workflow_stats(self.store, where)

    def everyones(
        self, *, workspace: str | None = None, statuses: Sequence[str] | None = None, limit: int = 100
    ) -> list[RunRecord]:
        """Every person's runs, most recently updated first: for whoever can open the
        database itself (`handrail runs list`)."""
        return self.store.list_runs(workspace=workspace, statuses=statuses, limit=limit)

    def events(self, run: RunRecord) -> list[Event]:
        return self.ledger.events(run.id)

    def shown_events(self, run: RunRecord, recent: int) -> list[Event]:
        """The run's accepted steps and its last `recent` events, in order: what is shown
        of a long log, read through indexes whatever its length (`handrail runs show`)."""
        return self.store.shown_events(run.id, recent)

    def chain_break(self, run: RunRecord, events: Sequence[Event] | None = None) -> Break | None:
        """Where the run's hash chain first fails to hold (store/chain.py), a passkey's
        signature that does not (runs/presence.py), or what of its row its events do not
        give (runs/replay.py); None when all holds. `events`: its log as already read."""
        events = events if events is not None else self.events(run)
        broken = check_run(self.store, run.id, run, events) or signature_break(self.store, run.id, events)
        if broken is None:
            broken = replay_break(self.store, run, events, self.ledger.pins)
        return broken

    def notifications(self, run: RunRecord) -> list[Notification]:
        """The run's webhook notifications and how their delivery went."""
        return self.store.notifications(run.id)

    @staticmethod
    def offers(run: RunRecord) -> frozenset[EventType]:
        """What may happen to the run next, as the transition table says."""
        return machine.offers(run.status)

    # -- workflow_resume -------------------------------------------------------------
    def open_runs(
        self, request: Request, workspace: str | None, limit: int = OPEN_RUNS_LISTED
    ) -> list[dict[str, Any]]:
        """The caller's open runs in `workspace` (None: in every workspace), latest first."""
        runs = self.store.list_runs(
            workspace=workspace, statuses=ACTIVE_STATUSES, owner=self.owner(request), limit=limit
        )
        return [shaped(r, OPEN_RUN_FIELDS) for r in runs]

    def resume(
        self, request: Request, snapshot: Snapshot, run_id: str | None, workspace: str | None
    ) -> dict[str, Any]:
        if run_id is None:
            return {"runs": self.open_runs(request, self.workspace(request, workspace))}
        run = self.tree.after(self.run(request, run_id))  # a parent read is a parent settled
        run = renewed(self.ledger, request, run)  # a branch read by its holder: its lease renewed
        workflow = self.pinned(snapshot, run)
        result: dict[str, Any] = {
            **self.tree.shown(run),
            **shaped(run, ("runId", "status", "workflowId", "workflowVersion", "goal", "workspace")),
            **view(run),
            **shaped(run, ("context",)),
            "recap": recap(self.store.shown_events(run.id, 0), workflow),  # its accepted steps only
        }
        current = snapshot.get(run.workflow_id)
        if current is not None and current.content_hash != run.source_hash:
            result["newerVersion"] = {
                "workflowVersion": current.version,
                "note": f"The workflow file changed since this run started (now version {current.version}); "
                f"this run stays on the version it started on ({run.workflow_version}). Start a new run "
                "to use the newer one.",
            }
        return result

    # -- workflow_abandon ------------------------------------------------------------
    def abandon(
        self, request: Request, run_id: str, reason: str, by: abandons.ByPerson = abandons.BY_PERSON
    ) -> dict[str, Any]:
        """`by`: how a person abandons (who, where, their passkey, whether the channel is one
        the agent shares: runs/abandons.py); an agent's request is its own."""

        def once() -> dict[str, Any]:
            run = self.run(request, run_id)
            if not machine.allows(run.status, EventType.ABANDONED):
                raise not_active(run)
            if request.session is not None or request.lease is not None:  # an agent: what it holds
                run = admitted(self.ledger, request, run)
            abandons.check_allowed(self.store, run, request)
            data = {"reason": reason, **abandons.by_whom(request)}
            if request.session is None:
                watched, page = self.decisions.gate_watches, self.awaiting.page(run.id)
                data.update(abandons.persons(self.store, run, by, watched, page))
            event = NewEvent(EventType.ABANDONED, data=data)
            written = self.tree.after(self.ledger.write(run, RunUpdate(), [event], self.owner(request)))
            return shaped(written, ("runId", "status", "workflowId"))

        return self.ledger.retrying(run_id, once)


def _baseline(workflow: Workflow, folder: str) -> dict[str, Any] | None:
    """Where git stands at the run's start, when a step's git check looks for changes."""
    if not any(
        getattr(c, "changes", False) for node in workflow.nodes.values() for c in getattr(node, "checks", ())
    ):
        return None
    from handrail.checks import git_baseline  # lazy: loaded with the first run started

    return git_baseline(folder).to_wire()
