"""What both stores share of a claim (spec/runs.md, "Claims and leases"): which branch
is free to claim, and the write that makes the caller its holder with a `claimed`
event chained onto its log.

A branch is free when it is active and nobody holds it, or its holder's lease has run
out (times are ISO text of one form, so they compare as text). The pick and the write
happen in one transaction that no other claim can interleave with: SQLite's write lock
(BEGIN IMMEDIATE), PostgreSQL's row lock (`FOR UPDATE SKIP LOCKED`: a second claimer
passes over the locked row to the next free branch instead of waiting for it).
"""

from __future__ import annotations

from typing import Any

from handrail.model.runs import EventType, NewEvent, RunRecord
from handrail.store.base import ClaimFilter
from handrail.store.chain import EventRow, chained_rows, new_head
from handrail.store.rows import RUN_COLUMNS, sealed


def _narrowed(where: ClaimFilter, mark: str) -> tuple[list[str], list[Any]]:
    """The clauses that keep the branches `where` lets a claim see (the owner's, and the
    parent, workflow and workspace when given), and their values."""
    clauses, values = [f"owner = {mark}"], [where.owner]
    for column, value in (
        ("parent_id", where.parent_id),
        ("workflow_id", where.workflow_id),
        ("workspace", where.workspace),
    ):
        if value is not None:
            clauses.append(f"{column} = {mark}")
            values.append(value)
    return clauses, values


def free_branch(where: ClaimFilter, at: str, mark: str, lock: str = "") -> tuple[str, list[Any]]:
    """The SELECT of the first free branch in item order, each candidate row locked with
    `lock` (PostgreSQL: FOR UPDATE SKIP LOCKED), and its values.

    Two picks, each the first of its kind in item order, and the earlier of the two: a
    branch nobody ever held (a partial index holds only those, so a claim does not walk
    past the branches already held, however many) and a held one whose lease ran out
    (found by its lease's end, a range of the held ones' index)."""
    narrowed, values = _narrowed(where, mark)
    common = ["parent_id IS NOT NULL", "branch IS NOT NULL", "status = 'active'", *narrowed]
    unheld = " AND ".join([*common, "holder IS NULL"])
    lapsed = " AND ".join([*common, "holder IS NOT NULL", f"lease_until < {mark}"])
    pick = f"SELECT {RUN_COLUMNS} FROM runs WHERE {{}} ORDER BY parent_id, branch LIMIT 1 {lock}"
    query = (
        f"WITH unheld AS ({pick.format(unheld)}), lapsed AS ({pick.format(lapsed)}) "
        "SELECT * FROM unheld UNION ALL SELECT * FROM lapsed ORDER BY parent_id, branch LIMIT 1"
    )
    return query, [*values, *values, at]


def claimed_event(run: RunRecord, holder: str, until: str, at: str) -> NewEvent:
    """The `claimed` event: who holds the branch until when, and whose lease ran out for it."""
    # the holder is kept with the digest of its lease token after a newline: the event
    # names the session alone
    session, before = holder.split("\n", 1)[0], (run.holder or "").split("\n", 1)[0]
    data: dict[str, Any] = {"holder": session, "until": until}
    if run.holder is not None and run.holder != holder:
        data["after"] = {"holder": before, "leaseEnded": run.lease_until}
    return NewEvent(EventType.CLAIMED, None, data)


def claim_write(
    run: RunRecord, holder: str, until: str, at: str, mark: str
) -> tuple[str, list[Any], list[EventRow], RunRecord]:
    """The UPDATE that makes `holder` the branch's (only if it is still as picked), its
    values, the event rows to insert with it, and the run as written."""
    rows = chained_rows(run.id, run.events, run.head, [claimed_event(run, holder, until, at)], run.owner, at)
    head = new_head(rows, run.head)
    query = (
        f"UPDATE runs SET holder = {mark}, lease_until = {mark}, updated_at = {mark}, "
        f"version = version + 1, events = events + 1, head = {mark}, seal = {mark} "
        f"WHERE id = {mark} AND version = {mark}"
    )
    # a claim decides none of the sealed fields: the seal moves on to the new head
    values = [holder, until, at, head, sealed(run, head, run.events + 1), run.id, run.version]
    after = run._replace(
        holder=holder,
        lease_until=until,
        updated_at=at,
        version=run.version + 1,
        events=run.events + 1,
        head=head,
    )
    return query, values, rows, after


def branch_counts(where: ClaimFilter, at: str, mark: str) -> tuple[str, list[Any]]:
    """How many of the branches a claim could see are open and held, open and free,
    or ended: why a claim found nothing. Rows: (status, held, count)."""
    narrowed, narrowing = _narrowed(where, mark)
    clauses = ["parent_id IS NOT NULL", "branch IS NOT NULL", *narrowed]
    values: list[Any] = [at, *narrowing]
    held = f"CASE WHEN holder IS NOT NULL AND lease_until >= {mark} THEN 1 ELSE 0 END"
    query = f"SELECT status, {held}, COUNT(*) FROM runs WHERE {' AND '.join(clauses)} GROUP BY 1, 2"
    return query, values


def renewal(run_id: str, holder: str, until: str, at: str, mark: str) -> tuple[str, list[Any]]:
    """The UPDATE that moves a live lease of `holder` on, and its values."""
    query = (
        f"UPDATE runs SET lease_until = {mark} WHERE id = {mark} AND holder = {mark} "
        f"AND lease_until >= {mark} AND lease_until < {mark}"
    )
    return query, [until, run_id, holder, at, until]
