"""Claims and leases (spec/runs.md, "Claims and leases"): workflow_claim hands an agent
session a branch of a parallel loop nobody holds, for `--lease-seconds`; every call of
its holder on the branch renews the lease, in the same write as the call's own; while
the lease lives, other sessions' calls on the branch are refused. A lease that runs
out frees the branch: the next claim takes it where its last accepted step left it.

Who holds a branch is the request's agent session (`Request.session`), within the
person: a claim only picks the asking person's branches, so one person's several
agents each get their own, and nobody sees another person's. A claim also gives a lease
token: a call that presents it (`Request.lease`) is the holder's, on any replica and
with or without a session, which is how a client without a session header (or behind a
load balancer) keeps its branch.
"""

from __future__ import annotations

import secrets
from typing import Any

from handrail.model.errors import BranchHeld
from handrail.model.request import Request
from handrail.model.runs import RunRecord, RunStatus
from handrail.runs.holders import holder_with_lease, session_of, token_matches
from handrail.runs.ledger import Ledger
from handrail.runs.shapes import shaped, view
from handrail.runs.tree import Tree
from handrail.store.base import ClaimFilter
from handrail.store.claims import branch_counts
from handrail.store.rows import later, now

PERSON = "person"  # the holder of a request that names no agent session
ORPHANS_PASSED = 32  # branches a claim cancels, at most, before it hands one out


def holder(request: Request) -> str:
    """Who a claim by `request` makes the holder: its agent session, else the person."""
    return request.session or PERSON


def holder_kind(held_by: str) -> str:
    """What kind of session a holder is (`stdio`, `http-session`, `http-connection`,
    `person`), the part an error may name: the rest identifies one session."""
    return held_by.split(":", 1)[0]


def admitted(ledger: Ledger, request: Request, run: RunRecord) -> RunRecord:
    """`run` as a call of `request` may write it: a branch it holds with its lease renewed
    (written with the call's own write); a branch another session holds while the lease
    lives refuses the call. A branch nobody holds, or whose lease ran out, is open to any
    call of its person, as any run is. A call that presents a lease token is judged by
    the token alone: the live token of the branch's claim makes it the holder, whatever
    its session; any other token is refused, saying why."""
    if request.lease is not None:
        return _by_token(ledger, request.lease, run)
    if run.holder is None or run.lease_until is None:
        return run
    if session_of(run.holder) == holder(request):
        return run._replace(lease_until=later(ledger.settings.lease_seconds))
    if run.lease_until < now():
        return run
    kind = holder_kind(run.holder)
    raise BranchHeld(
        f"Branch is held by another agent: {run.id} is held by another {kind} session until "
        f"{run.lease_until}",
        {
            "runId": run.id,
            "holderKind": kind,
            "leaseUntil": run.lease_until,
            "details": f"another agent session ({kind}) claimed this branch; its lease ends at "
            f"{run.lease_until} unless that session calls on it again. Claim another branch with "
            "workflow_claim, or claim this one once its lease has ended",
        },
    )


def _by_token(ledger: Ledger, token: str, run: RunRecord) -> RunRecord:
    """The branch renewed for the holder of `token`, or -32013 saying what is wrong with it."""
    if run.holder is None or run.lease_until is None or not token_matches(run.holder, token):
        why = (
            "the lease token is not this branch's: it was given for another branch, or the branch "
            "was claimed again since (a lease that ended is taken by the next claim)"
            if run.holder is not None
            else "the lease token is not this branch's: nobody holds this branch"
        )
        raise _lease_refused(run, "wrong", why)
    if run.lease_until < now():
        why = (
            f"the lease ended at {run.lease_until} (the lease token is good only while it lives, "
            "and each call on the branch renews it); claim the branch again with workflow_claim"
        )
        raise _lease_refused(run, "expired", why)
    return run._replace(lease_until=later(ledger.settings.lease_seconds))


def _lease_refused(run: RunRecord, problem: str, why: str) -> BranchHeld:
    return BranchHeld(
        f"Branch is held by another agent: {run.id} does not take this lease token ({problem})",
        {
            "runId": run.id,
            "holderKind": holder_kind(run.holder) if run.holder is not None else None,
            "leaseUntil": run.lease_until,
            "lease": problem,
            "details": why,
        },
    )


def renewed(ledger: Ledger, request: Request, run: RunRecord) -> RunRecord:
    """A read of the branch by its holder (workflow_resume) renews the lease too, with a
    write of the lease alone; `run` as it then stands. A read that presents a lease token
    is judged by it as a write is (`admitted`)."""
    if request.lease is not None:
        run = _by_token(ledger, request.lease, run)
    elif run.holder is None or session_of(run.holder) != holder(request) or run.lease_until is None:
        return run
    assert run.holder is not None  # for the type checker: `_by_token` refuses a branch nobody holds
    until = later(ledger.settings.lease_seconds)
    if ledger.store.renew(run.id, run.holder, until):
        return run._replace(lease_until=until)
    return run


class Claims:
    """workflow_claim over the ledger's store."""

    def __init__(self, ledger: Ledger, tree: Tree) -> None:
        self.ledger = ledger
        self.tree = tree

    def claim(
        self,
        request: Request,
        run_id: str | None,
        workflow_id: str | None,
        workspace: str | None,
    ) -> dict[str, Any]:
        """The first free branch in item order, claimed for the caller's session; or why
        there is none. `run_id`: only that parent run's branches (the caller's own run)."""
        ledger = self.ledger
        if run_id is not None:
            # another person's run is not found, as everywhere; a parent whose server died
            # before it opened its next branches opens them now
            self.tree.after(ledger.run(request, run_id))
        where = ClaimFilter(
            owner=ledger.owner(request),
            parent_id=run_id,
            workflow_id=workflow_id,
            workspace=None if workspace is None else ledger.workspace(request, workspace),
        )
        run = None
        token = secrets.token_urlsafe(32)  # the lease's bearer secret: the store keeps its digest
        for _ in range(ORPHANS_PASSED):
            run = ledger.store.claim(
                where, holder_with_lease(holder(request), token), later(ledger.settings.lease_seconds)
            )
            if run is None or not self.tree.orphaned(run):
                break
            self.tree.healed(run)  # its parent moved on before cancelling it: never handed out
            run = None
        if run is None:
            return self._nothing(where)
        ledger.remember(run)
        return {
            "claimed": True,
            **shaped(run, ("runId", "status", "workflowId", "goal", "workspace")),
            "parentId": run.parent_id,
            "parentStep": run.parent_step,
            "branch": run.branch,
            **_item(run),
            "leaseUntil": run.lease_until,
            "lease": {"token": token, "until": run.lease_until},
            **view(run),
        }

    def _nothing(self, where: ClaimFilter) -> dict[str, Any]:
        store = self.ledger.store
        mark = "?" if store.dialect == "sqlite" else "%s"
        query, values = branch_counts(where, now(), mark)
        held = ended = 0
        for status, _, count in store.aggregate(query, values):
            # an open branch that looks free here is one another claim is taking right now
            # (locked, not yet committed), or one whose lease ended since: held either way
            if status in (RunStatus.ACTIVE, RunStatus.AWAITING_APPROVAL):
                held += int(count)
            else:
                ended += int(count)
        if held:
            message = (
                f"Nothing to claim: every open branch is held ({held} held by agents whose lease "
                "lives, or waiting for a person's approval); call workflow_claim again later"
            )
        elif ended:
            message = f"Nothing to claim: all {ended} branches are done (completed or abandoned)"
        else:
            message = "Nothing to claim: no parallel loop of yours has branches here"
        return {"claimed": False, "message": message, "branches": {"held": held, "ended": ended}}


def _item(run: RunRecord) -> dict[str, Any]:
    """The loop item the branch works on, as its position keeps it."""
    scope = run.position.get("branchOf")
    if isinstance(scope, dict) and "item" in scope:
        return {"item": scope["item"]}
    return {}
