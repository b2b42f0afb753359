"""workflow_claim and leases (spec/runs.md, "Claims and leases") through the service's
run tools, on branches written as the run layer writes them: each claim gives a branch
nobody holds, the holder's calls renew its lease, other sessions are refused while it
lives, and a lease that runs out lets the next claimer carry on from the last accepted
step."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handrail.catalog import load_catalog
from handrail.model.errors import HandrailError
from handrail.model.request import Request
from handrail.model.runs import RunRecord
from handrail.runs.holders import session_of, token_digest
from handrail.runs.ledger import LEASE_SECONDS, RunSettings
from handrail.service.core import Service, later_runs
from tests.helpers.branches import write_branches
from tests.runs.workflows import WORKFLOW_ID, build_feature, write

AGENT_A = Request(session="stdio:a")
AGENT_B = Request(session="stdio:b")


@pytest.fixture
def service(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Service]:
    """The service of a server whose leases last LEASE_SECONDS, or as long as the test's
    indirect parameter says."""
    write(tmp_path / "flows", build_feature())
    lease = getattr(request, "param", LEASE_SECONDS)
    made = Service(
        load_catalog(tmp_path / "flows", bundled=False),
        runs=later_runs(f"sqlite:///{tmp_path / 'runs.db'}", lambda: RunSettings(lease_seconds=lease)),
    )
    try:
        yield made
    finally:
        made.close()


def branches(
    service: Service, folder: Path, items: list[str], owner: Request = AGENT_A
) -> tuple[str, list[RunRecord]]:
    """A parent run of `owner`'s person and one branch per item."""
    started = service.call(
        "workflow_start",
        {"workflowId": WORKFLOW_ID, "goal": "Fan out", "workspace": str(folder), "context": {"parts": ["x"]}},
        owner,
    )
    parent = service.runs.store.get(started["runId"])
    assert parent is not None
    workflow = service.runs.pinned(service.catalog.snapshot(), parent)
    return parent.id, write_branches(service.runs.store, parent, workflow, items)


def claim(service: Service, request: Request, **args: Any) -> dict[str, Any]:
    answer: dict[str, Any] = service.call("workflow_claim", args, request)
    return answer


def test_two_agent_sessions_of_one_person_claim_different_branches_in_item_order(
    service: Service, tmp_path: Path
) -> None:
    parent, made = branches(service, tmp_path, ["a.py", "b.py"])
    first = claim(service, AGENT_A, runId=parent)
    second = claim(service, AGENT_B, runId=parent)
    assert first["claimed"] is True and second["claimed"] is True
    assert [first["runId"], second["runId"]] == [made[0].id, made[1].id]
    assert [first["branch"], second["branch"]] == [0, 1]
    assert first["parentId"] == parent and first["parentStep"] == "each"
    assert first["step"]["id"] == "plan" and first["progress"] == {"completed": 0}
    assert first["leaseUntil"] > time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    # the same session claiming again gets no branch it or anyone holds
    again = claim(service, AGENT_A, runId=parent)
    assert again["claimed"] is False
    assert again["message"].startswith("Nothing to claim: every open branch is held")
    assert again["branches"] == {"held": 2, "ended": 0}
    held = service.runs.store.get(made[0].id)
    assert held is not None and session_of(held.holder) == "stdio:a"
    [claimed] = [e for e in service.runs.store.events(made[0].id) if e.type == "claimed"]
    assert claimed.data == {"holder": "stdio:a", "until": first["leaseUntil"]}


def test_another_session_is_refused_a_held_branch_and_the_holders_calls_renew_its_lease(
    service: Service, tmp_path: Path
) -> None:
    _, made = branches(service, tmp_path, ["a.py"])
    mine = claim(service, AGENT_A)
    assert mine["runId"] == made[0].id
    submit = {"runId": mine["runId"], "stepId": "plan", "output": "Plan: one part."}
    with pytest.raises(HandrailError) as refused:
        service.call("workflow_continue", submit, AGENT_B)
    assert refused.value.code == -32013
    data = refused.value.data
    assert data["holderKind"] == "stdio" and data["leaseUntil"] == mine["leaseUntil"]
    assert "stdio:a" not in str(data) and "stdio:a" not in refused.value.message  # which session: not said
    assert service.runs.store.get(mine["runId"]).accepted == 0  # type: ignore[union-attr]
    time.sleep(0.01)
    accepted = service.call("workflow_continue", submit, AGENT_A)
    assert accepted["accepted"] is True and accepted["step"]["id"] == "build"
    after = service.runs.store.get(mine["runId"])
    assert (
        after is not None and session_of(after.holder) == "stdio:a" and after.lease_until > mine["leaseUntil"]
    )


def test_another_session_is_refused_abandoning_a_held_branch_and_the_holder_may(
    service: Service, tmp_path: Path
) -> None:
    _, made = branches(service, tmp_path, ["a.py"])
    mine = claim(service, AGENT_A)
    with pytest.raises(HandrailError) as refused:
        service.call("workflow_abandon", {"runId": mine["runId"], "reason": "Not mine"}, AGENT_B)
    assert refused.value.code == -32013 and refused.value.data["runId"] == made[0].id
    assert service.runs.store.get(mine["runId"]).status == "active"  # type: ignore[union-attr]
    ended = service.call("workflow_abandon", {"runId": mine["runId"], "reason": "Done with it"}, AGENT_A)
    assert ended["status"] == "abandoned"


@pytest.mark.parametrize("service", [0.5], indirect=True)
def test_a_lease_that_runs_out_mid_branch_lets_the_next_claimer_carry_on_from_the_last_accepted_step(
    service: Service, tmp_path: Path
) -> None:
    _, made = branches(service, tmp_path, ["a.py"])
    mine = claim(service, AGENT_A)
    first = service.call(
        "workflow_continue", {"runId": mine["runId"], "stepId": "plan", "output": "Plan: one."}, AGENT_A
    )
    assert first["accepted"] is True and first["step"]["id"] == "build"
    assert claim(service, AGENT_B)["claimed"] is False  # A's lease still lives
    time.sleep(0.6)  # A went quiet: its lease runs out
    taken = claim(service, AGENT_B)
    assert taken["claimed"] is True and taken["runId"] == made[0].id
    assert taken["step"]["id"] == "build" and taken["progress"] == {"completed": 1}
    done = service.call(
        "workflow_continue", {"runId": taken["runId"], "stepId": "build", "output": "Built x."}, AGENT_B
    )
    assert done["accepted"] is True and done["step"]["id"] == "report"
    with pytest.raises(HandrailError) as late:  # A comes back: B holds the branch now
        service.call(
            "workflow_continue", {"runId": taken["runId"], "stepId": "report", "output": "Report."}, AGENT_A
        )
    assert late.value.code == -32013
    events = service.runs.store.events(made[0].id)
    assert [(e.type, e.step_id) for e in events] == [
        ("started", None), ("claimed", None), ("accepted", "plan"), ("claimed", None), ("accepted", "build"),
    ]  # fmt: skip
    assert events[3].data["holder"] == "stdio:b"
    assert events[3].data["after"]["holder"] == "stdio:a"


def test_nothing_to_claim_says_when_every_branch_is_done(service: Service, tmp_path: Path) -> None:
    parent, _ = branches(service, tmp_path, ["a.py"])
    mine = claim(service, AGENT_A, runId=parent)
    service.call("workflow_abandon", {"runId": mine["runId"], "reason": "not needed"}, AGENT_A)
    answer = claim(service, AGENT_B, runId=parent)
    assert answer == {
        "claimed": False,
        "message": "Nothing to claim: all 1 branches are done (completed or abandoned)",
        "branches": {"held": 0, "ended": 1},
    }
    assert claim(service, AGENT_B, workflowId="other")["message"].startswith("Nothing to claim: no parallel")


def test_a_claim_never_gives_or_names_another_persons_branches(service: Service, tmp_path: Path) -> None:
    alice, bob = Request(owner="alice", session="s1"), Request(owner="bob", session="s2")
    parent, _ = branches(service, tmp_path, ["a.py"], owner=alice)
    assert claim(service, bob)["message"].startswith("Nothing to claim: no parallel")
    with pytest.raises(HandrailError) as refused:
        claim(service, bob, runId=parent)
    assert refused.value.code == -32008
    assert claim(service, alice, runId=parent)["claimed"] is True


def test_the_holders_resume_renews_the_lease_and_anothers_does_not(service: Service, tmp_path: Path) -> None:
    _, made = branches(service, tmp_path, ["a.py"])
    mine = claim(service, AGENT_A)
    time.sleep(0.01)
    service.call(
        "workflow_resume", {"runId": mine["runId"]}, AGENT_B
    )  # reading is open to the person's agents
    unchanged = service.runs.store.get(made[0].id)
    assert unchanged is not None and unchanged.lease_until == mine["leaseUntil"]
    service.call("workflow_resume", {"runId": mine["runId"]}, AGENT_A)
    renewed = service.runs.store.get(made[0].id)
    assert renewed is not None and renewed.lease_until > mine["leaseUntil"]
    assert renewed.version == unchanged.version  # the lease alone: no event, no new version


# -- the lease token -----------------------------------------------------------------------
ELSEWHERE = Request(session="http-connection:10.0.0.2:51000")  # the same agent, through another replica


def test_whoever_presents_the_lease_token_holds_the_branch_whatever_its_session(
    service: Service, tmp_path: Path
) -> None:
    _, made = branches(service, tmp_path, ["a.py"])
    mine = claim(service, AGENT_A)
    token = mine["lease"]["token"]
    assert mine["lease"]["until"] == mine["leaseUntil"] and len(token) >= 32
    submit = {"runId": mine["runId"], "stepId": "plan", "output": "Plan: one part."}
    with pytest.raises(HandrailError) as refused:  # another connection, no token: another session
        service.call("workflow_continue", submit, ELSEWHERE)
    assert refused.value.code == -32013
    accepted = service.call("workflow_continue", {**submit, "lease": token}, ELSEWHERE)
    assert accepted["accepted"] is True and accepted["step"]["id"] == "build"
    read = service.call("workflow_resume", {"runId": mine["runId"], "lease": token}, Request())
    assert read["step"]["id"] == "build"
    kept = service.runs.store.get(mine["runId"])
    assert kept is not None and kept.holder is not None
    assert token not in kept.holder and token_digest(token) in kept.holder  # a bearer secret: its digest
    assert all(token not in str(e.data) for e in service.runs.store.events(made[0].id))
    assert service.call("workflow_continue", {**submit, "stepId": "build", "output": "Built x."}, AGENT_A)[
        "accepted"
    ]  # the session that claimed it still holds it too
    ended = service.call(
        "workflow_abandon", {"runId": mine["runId"], "reason": "Done here", "lease": token}, ELSEWHERE
    )
    assert ended["status"] == "abandoned"


@pytest.mark.parametrize("service", [0.2], indirect=True)
def test_a_wrong_or_expired_lease_token_is_refused_saying_which(service: Service, tmp_path: Path) -> None:
    _, made = branches(service, tmp_path, ["a.py", "b.py"])
    first, second = claim(service, AGENT_A), claim(service, AGENT_A)
    submit = {"runId": first["runId"], "stepId": "plan", "output": "Plan: one part."}
    for wrong in ("not-a-token", second["lease"]["token"]):  # made up, or another branch's
        with pytest.raises(HandrailError) as refused:
            service.call("workflow_continue", {**submit, "lease": wrong}, AGENT_A)
        assert refused.value.code == -32013 and refused.value.data["lease"] == "wrong"
        assert "not this branch's" in refused.value.data["details"]
    time.sleep(0.4)  # the lease ends: its token with it, even for the session that claimed it
    for tool, args in (("workflow_continue", submit), ("workflow_resume", {"runId": first["runId"]})):
        with pytest.raises(HandrailError) as late:
            service.call(tool, {**args, "lease": first["lease"]["token"]}, AGENT_A)
        assert late.value.code == -32013 and late.value.data["lease"] == "expired"
        assert "claim the branch again" in late.value.data["details"]
    assert service.runs.store.get(made[0].id).accepted == 0  # type: ignore[union-attr]
    again = claim(service, AGENT_B)
    assert again["runId"] == made[0].id and again["lease"]["token"] != first["lease"]["token"]
    with pytest.raises(HandrailError) as old:
        service.call("workflow_continue", {**submit, "lease": first["lease"]["token"]}, AGENT_A)
    assert old.value.data["lease"] == "wrong"
    assert service.call("workflow_continue", {**submit, "lease": again["lease"]["token"]}, AGENT_A)[
        "accepted"
    ]
