"""What a tool call changed, judged by the current step's rules (runs/violations.py):
the same words a refusal beforehand uses, whatever made the change."""

from __future__ import annotations

import json

from handrail.rules.policy import policy_of_source
from handrail.runs.gate import Options, Protected, RunFacts
from handrail.runs.violations import Change, event_data, forbidden, message
from tests.gate.runs import FIXTURE

WORKSPACE = "/w/shop"
NOTHING = Protected((), "/home/ana")


def at(step: str, status: str = "active") -> RunFacts:
    document = json.loads(FIXTURE.read_text())
    ids = [s["id"] for s in document["steps"]]
    return RunFacts(
        run_id="run_1",
        workflow_id="gate-fixture",
        goal="g",
        status=status,
        workspace=WORKSPACE,
        step_id=step,
        step_title=step,
        step_prompt=None,
        step_number=ids.index(step) + 1,
        step_count=len(ids),
        accepted=(),
        policy=policy_of_source(document, step),
        stop_refusals=0,
    )


def test_a_changed_file_is_judged_as_an_edit_of_it() -> None:
    changes = [
        Change("file", f"{WORKSPACE}/src/cart.py", "modified"),
        Change("file", f"{WORKSPACE}/docs/plan.md", "added"),
    ]
    (found,) = forbidden(at("plan"), changes, Options(), NOTHING)
    assert found.change.target.endswith("src/cart.py")
    assert "does not allow edit:src/cart.py" in found.reason
    assert forbidden(at("implement"), changes, Options(), NOTHING) == []


def test_a_ref_that_gained_commits_is_judged_as_a_commit() -> None:
    landed = Change("ref", "refs/heads/main", "commits", "a" * 40, "b" * 40)
    moved_back = Change("ref", "refs/heads/main", "moved", "b" * 40, "a" * 40)
    (found,) = forbidden(at("implement"), [landed, moved_back], Options(), NOTHING)
    assert found.change == landed and "commit after the tests step" in found.reason
    assert forbidden(at("test"), [landed], Options(), NOTHING) == []


def test_the_gates_installation_may_not_change_at_any_step() -> None:
    hook = Change("installation", "/w/shop/.git/hooks/pre-commit", "deleted")
    for step in ("plan", "implement", "test", "release"):
        assert [f.change for f in forbidden(at(step), [hook], Options(), NOTHING)] == [hook]


def test_nothing_is_forbidden_without_an_active_run() -> None:
    change = Change("file", f"{WORKSPACE}/src/cart.py", "modified")
    assert forbidden(None, [change], Options(), NOTHING) == []
    assert forbidden(at("plan", status="completed"), [change], Options(), NOTHING) == []


def test_the_event_and_the_message_name_what_was_undone_and_why() -> None:
    found = forbidden(
        at("plan"), [Change("file", f"{WORKSPACE}/src/cart.py", "modified")], Options(), NOTHING
    )
    undone = ["src/cart.py (modified: put back)"]
    data = event_data("after-tool", found, undone, ["/h/gate/run_1/violations/1"], "s-1", "Bash")
    assert data["changes"] == [{"what": "file", "target": f"{WORKSPACE}/src/cart.py", "change": "modified"}]
    assert (data["count"], data["undone"], data["session"], data["tool"]) == (1, undone, "s-1", "Bash")
    text = message(at("plan"), found, undone, data["kept"])
    assert "src/cart.py (modified: put back)" in text and "step 'plan' (1 of 4, run run_1)" in text
